"""A variant's row in the record, built once: from its measurements, or from how it failed.

What a row says is decided here: rates and their shares of the ceilings, tolerance, the
SDPA backend from the ops seen, and, for a failure, whether it was a refusal
(``unsupported``, with PyTorch's reason), running out of memory (``oom``) or a bug
(``error``). The runner only measures and calls these.
"""

from __future__ import annotations

import errno
from typing import Any

from attnprof.formatting import one_line
from attnprof.knowledge.sdpa_backends import refusal_of, sdpa_backend
from attnprof.measure.accuracy import TOLERANCE
from attnprof.measure.deadline import TimeLimitExceeded
from attnprof.measure.device import memory_shortfall
from attnprof.measure.stats import Summary, summarize
from attnprof.record.compare import Latency, Status, VariantResult
from attnprof.record.environment import Ceilings
from attnprof.run.guards import WrongOutput
from attnprof.run.measurements import Measurements
from attnprof.spec import costs
from attnprof.spec.workload import Workload
from attnprof.variants import Variant

__all__ = ["NOT_RUN", "failure_row", "impossible_shares", "is_oom", "latency", "predicted_oom",
           "ran_out_of_memory", "result_row", "share", "status_row"]

#: How the reason of an ``oom`` row that was predicted, not run, begins.
NOT_RUN = "not run: "


def share(rate: float | None, ceiling: float | None) -> float | None:
    """``rate`` as a share of ``ceiling`` (None when either is unknown)."""
    return rate / ceiling if rate is not None and ceiling else None


def status_row(variant: Variant, status: Status, reason: str, **fields: Any) -> VariantResult:
    """The row of a variant that was not measured: its status and the reason."""
    return VariantResult(variant=variant.name, family=variant.family, summary=variant.summary,
                         status=status, reason=reason, **fields)


def latency(stats: Summary, samples_ms: list[float]) -> Latency:
    """The record's latency: ``stats`` (the summary of ``samples_ms``) and the samples."""
    return Latency(median=stats.median, iqr=stats.iqr, q1=stats.q1, q3=stats.q3,
                   min=stats.minimum, max=stats.maximum, count=stats.count,
                   noisy=stats.noisy, samples=samples_ms)


def result_row(variant: Variant, workload: Workload, measured: Measurements,
               ceilings: Ceilings | None) -> VariantResult:
    """The row of a measured variant: latency statistics, rates, memory, error, notes."""
    device_timed = workload.device_type == "cuda"
    timing = measured.timing(device_timed)
    stats = summarize(timing.samples_ms)
    seconds = stats.median / 1e3
    flops = costs.step_flops(workload, variant.window(workload))
    moved = costs.step_bytes(workload)
    tflops = costs.achieved_rate(flops, seconds)
    gbps = costs.achieved_rate(moved, seconds)
    memory, error = measured.memory, measured.error
    tol = TOLERANCE[workload.dtype]
    of_matmul = share(tflops, ceilings.matmul_tflops_per_s * 1e12 if ceilings else None)
    of_copy = share(gbps, ceilings.bandwidth_gbytes_per_s * 1e9 if ceilings else None)
    return VariantResult(
        variant=variant.name, family=variant.family, summary=variant.summary, status="ok",
        latency_ms=latency(stats, timing.samples_ms),
        timing="cuda-events" if device_timed else "wall",
        cpu_dispatch_ms=summarize(timing.dispatch_ms).median,
        device_ms=stats.median if device_timed else None,
        compile_time_s=timing.first_call_s if variant.compiled else None,
        first_call_s=timing.first_call_s,
        peak_memory_bytes=memory.peak_bytes if memory else None,
        peak_memory_method=memory.method if memory else None,
        minor_faults_per_call=measured.faults_per_call(),
        flops=flops, flops_convention=costs.FLOPS_CONVENTION,
        tflops_per_s=None if tflops is None else tflops / 1e12,
        bytes_moved=moved, gbytes_per_s=None if gbps is None else gbps / 1e9,
        flops_of_ceiling=of_matmul, bandwidth_of_ceiling=of_copy,
        max_abs_error=error, tolerance=tol,
        within_tolerance=None if error is None else bool(error <= tol),
        sdpa_backend=sdpa_backend(memory.op_names) if memory else None,
        ops=list(memory.op_names) if memory else [],
        notes=[*measured.notes, *impossible_shares(of_matmul, of_copy)],
        warnings=list(measured.warnings), trace=measured.trace,
    )


def impossible_shares(of_matmul: float | None, of_copy: float | None) -> list[str]:
    """Notes for shares of a ceiling above 100%, which no share should read silently.

    Nothing runs faster than this machine's best matmul: above it, either the ceiling was
    measured low (the machine was busy while it was timed) or the variant did not do the
    work its FLOPs count. Above the copy ceiling, the data stayed in caches that the
    ceiling's large copy cannot use.
    """
    notes = []
    if of_matmul is not None and of_matmul > 1:
        notes.append(f"{of_matmul:.0%} of the matmul ceiling is impossible: the ceiling was "
                     "measured low (a busy machine while it was timed) or the variant did not "
                     "do the work counted; do not read the share")
    if of_copy is not None and of_copy > 1:
        notes.append(f"{of_copy:.0%} of the copy ceiling: the data stayed in the caches, "
                     "which the ceiling's large copy cannot")
    return notes


def failure_row(variant: Variant, exc: BaseException, caught: list[str],
                workload: Workload) -> VariantResult:
    """The row of a variant that raised: ``unsupported`` for a refusal, else oom or error
    (``timeout`` past its time limit)."""
    if isinstance(exc, TimeLimitExceeded):
        return status_row(variant, "timeout", f"{exc} (--variant-timeout); a hang inside "
                          "native code needs --executor process", warnings=caught)
    if isinstance(exc, SystemExit):  # user code ending the process: its bug, not the run's
        return status_row(variant, "error", f"SystemExit: the variant called "
                          f"sys.exit({exc.code!r}); a variant must return its output",
                          warnings=caught)
    if isinstance(exc, WrongOutput):
        return status_row(variant, "error", f"wrong output: {one_line(str(exc))}",
                          warnings=caught)
    refusal = (variant.explain_refusal(exc, caught, workload)
               or refusal_of(exc, caught, None, workload.device_type))
    if refusal is None and workload.mode == "forward+backward" and _no_autograd(exc):
        refusal = ("no backward: its output does not reach q, k, v through autograd "
                   f"(PyTorch: {one_line(str(exc), 120)}); measure it with --mode forward")
    if refusal is not None:
        return status_row(variant, "unsupported", refusal, warnings=caught)
    message = f"{type(exc).__name__}: {one_line(str(exc))}"
    return status_row(variant, "oom" if is_oom(exc) else "error", message, warnings=caught)


def _no_autograd(exc: BaseException) -> bool:
    """Whether ``exc`` is autograd finding no graph from the output back to the inputs
    (a variant computing under no_grad, detaching, or leaving torch for another library)."""
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "does not require grad" in text or "One of the differentiated Tensors" in text)


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` means the device (or host) ran out of memory."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:  # mmap/open under a limit
        return True
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text


def ran_out_of_memory(row: VariantResult) -> bool:
    """Whether ``row`` is ``oom`` because an allocation failed (not predicted, not run)."""
    return row.status == "oom" and not row.reason.startswith(NOT_RUN)


def predicted_oom(variant: Variant, workload: Workload) -> str | None:
    """A reason not to run a variant that would certainly exhaust memory, else ``None``.

    On CPU the kernel's OOM killer ends the whole process instead of raising, so a variant
    that materialises B·H·Sq·Sk fp32 scores far beyond memory must not be attempted.
    """
    if not variant.materializes_scores:
        return None
    need = (costs.resident_bytes(workload)
            + 3 * costs.score_matrix_bytes(workload, element_bytes=4))
    if short := memory_shortfall(need, workload.device):
        return (f"{NOT_RUN}materialising the scores needs about {short[0]}, {short[1]}; "
                "use a fused variant or a smaller shape")
    return None
