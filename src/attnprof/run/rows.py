"""A variant's row in the record, built once: from its measurements, or from how it failed.

What a row says is decided here: rates and their shares of the ceilings, tolerance, the
SDPA backend from the ops seen, and, for a failure, whether it was a refusal
(``unsupported``, with PyTorch's reason), running out of memory (``oom``) or a bug
(``error``). The runner only measures and calls these.
"""

from __future__ import annotations

import errno
from typing import Any

import msgspec

from attnprof.formatting import one_line
from attnprof.knowledge.capture_noise import contended
from attnprof.knowledge.sdpa_backends import refusal_of, sdpa_backend
from attnprof.measure.accuracy import TOLERANCE
from attnprof.measure.contention import oversubscribed
from attnprof.measure.deadline import TimeLimitExceeded
from attnprof.measure.device import memory_shortfall
from attnprof.measure.stats import Summary, summarize
from attnprof.record.compare import Latency, Status, VariantResult
from attnprof.record.environment import Ceilings
from attnprof.run.guards import WrongOutput
from attnprof.run.measurements import Measurements
from attnprof.variants import Variant
from attnprof.workload import costs
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

__all__ = ["NOT_RUN", "accuracy_verdict", "failure_row", "impossible_shares", "is_oom",
           "kept_row", "latency", "planned_results", "predicted_oom", "ran_out_of_memory",
           "result_row", "share", "state_notes", "status_row"]

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
               ceilings: Ceilings | None, *, partial_note: bool = True) -> VariantResult:
    """The row of a measured variant: latency statistics, rates, memory, error, notes.

    Its status is ``ok``, or ``wrong`` when its output is off the float64 reference by more
    than the dtype's tolerance or holds NaN or ±Inf. ``partial_note``: say when fewer
    samples were taken than planned (the caller may say it its own way).
    """
    device_timed = workload.device_type == "cuda"
    timing = measured.timing(device_timed)
    stats = summarize(timing.samples_ms)
    seconds = stats.median / 1e3
    flops = costs.step_flops(workload, variant.window(workload))
    floor = costs.step_bytes(workload)
    memory, error, nonfinite = measured.memory, measured.error, measured.nonfinite
    traffic = memory.traffic if memory is not None else None
    # GB/s over what the variant moved (its traffic); over the I/O floor only when its
    # traffic is unknown, and the row says which.
    moved = float(traffic.total_bytes) if traffic is not None else floor
    tflops = costs.achieved_rate(flops, seconds)
    gbps = costs.achieved_rate(moved, seconds)
    tol = TOLERANCE[workload.compute_dtype]
    status, reason = accuracy_verdict(error, nonfinite, tol, workload.dtype)
    of_matmul = share(tflops, ceilings.matmul_tflops_per_s * 1e12 if ceilings else None)
    of_copy = share(gbps, ceilings.bandwidth_gbytes_per_s * 1e9 if ceilings else None)
    taken, planned = len(timing.samples_ms), measured.warmup.samples
    partial = ([f"latency from {taken} of {planned} samples: the rounds after them did not "
                "run"] if partial_note and 0 < taken < planned else [])
    return VariantResult(
        variant=variant.name, family=variant.family, summary=variant.summary, status=status,
        reason=reason, latency_ms=latency(stats, timing.samples_ms),
        timing="cuda-events" if device_timed else "wall",
        cpu_dispatch_ms=summarize(timing.dispatch_ms).median,
        device_ms=stats.median if device_timed else None,
        compile_time_s=timing.first_call_s if variant.compiled else None,
        first_call_s=timing.first_call_s,
        peak_memory_bytes=memory.peak_bytes if memory else None,
        peak_memory_method=memory.method if memory else None,
        minor_faults_per_call=measured.faults_per_call(),
        flops=flops, flops_convention=costs.flops_convention(workload),
        tflops_per_s=None if tflops is None else tflops / 1e12,
        bytes_moved=floor, gbytes_per_s=None if gbps is None else gbps / 1e9,
        traffic_bytes=None if traffic is None else float(traffic.total_bytes),
        traffic_ops=None if traffic is None else traffic.ops,
        traffic_assumed_ops=None if traffic is None else traffic.assumed,
        gbytes_basis="traffic" if traffic is not None else "I/O floor",
        bound_by=costs.roofline_bound(
            flops, None if traffic is None else traffic.total_bytes,
            ceilings.matmul_tflops_per_s * 1e12 if ceilings else None,
            ceilings.bandwidth_gbytes_per_s * 1e9 if ceilings else None),
        flops_of_ceiling=of_matmul, bandwidth_of_ceiling=of_copy,
        max_abs_error=error, nonfinite_values=nonfinite, tolerance=tol,
        within_tolerance=None if error is None and nonfinite is None else status == "ok",
        sdpa_backend=sdpa_backend(memory.op_names) if memory else None,
        ops=list(memory.op_names) if memory else [],
        notes=[*measured.notes, *partial, *state_notes(measured.state_changes),
               *contention_notes(measured.wait_fraction()),
               *impossible_shares(of_matmul, of_copy)],
        warnings=list(measured.warnings), trace=measured.trace,
    )


def accuracy_verdict(error: float | None, nonfinite: int | None, tolerance: float,
                     dtype: str) -> tuple[Status, str]:
    """``ok``, or ``wrong`` and why, from an output's error against the float64 reference
    (``error`` ``None`` and ``nonfinite`` ``None``: not checked, which is ``ok``)."""
    if nonfinite:
        return "wrong", (f"its output holds {nonfinite:,} NaN or infinite value"
                         f"{'s' if nonfinite != 1 else ''}; the float64 reference has none")
    if error is not None and not error <= tolerance:
        return "wrong", (f"its output is off the float64 reference by up to {error:.3g}, "
                         f"past {dtype}'s tolerance of {tolerance:.0e}")
    return "ok", ""


#: How a row's note about other processes' load begins (a merge of processes finds it so).
CONTENDED_NOTE = "its timed calls waited for a CPU"


def contention_notes(wait: float | None) -> list[str]:
    """The note of a variant whose timed calls waited for a CPU more than
    :data:`~attnprof.knowledge.capture_noise.CONTENDED` of their time (none if not).

    On the 2-core VM, one other busy process turned SDPA's 0.014 ms calls at seq 64 into
    8 ms ones: every intra-op parallel region waited at its barrier for the thread the
    scheduler had parked. The samples can be tight then, so the IQR does not tell.
    """
    if not contended(wait):
        return []
    assert wait is not None
    own = oversubscribed()
    if own is not None:  # more threads than CPUs: the wait is the run's own
        return [f"{CONTENDED_NOTE} {wait:.0%} of their time (summed over its threads): its "
                f"{own[0]} intra-op threads outnumber the {own[1]} CPUs it may use and take "
                f"turns, and its latency includes their waits; use --threads {own[1]} or "
                "fewer"]
    return [f"{CONTENDED_NOTE} {wait:.0%} of their time (summed over its threads): other "
            "processes held the CPUs, and its latency is theirs as much as its own; measure "
            "on a quiet machine"]


def state_notes(changes: list[str]) -> list[str]:
    """The note of a variant that changed torch's process-wide settings (none if not)."""
    if not changes:
        return []
    return ["changed torch's global state, put back after each of its phases (the other "
            f"variants ran as set; its own numbers ran with its change): {'; '.join(changes)}"]


#: What a comparison measures of a variant, by the names a kept row's note uses.
PHASE_RESULTS = ("latency", "peak memory", "accuracy", "trace")


def planned_results(settings: Settings) -> tuple[str, ...]:
    """What ``settings`` have a comparison measure of every variant (of PHASE_RESULTS)."""
    wanted = {"latency": True, "peak memory": settings.measure_memory,
              "accuracy": settings.check_accuracy, "trace": settings.trace_dir is not None}
    return tuple(name for name in PHASE_RESULTS if wanted[name])


def kept_row(row: VariantResult, failure: VariantResult,
             planned: tuple[str, ...]) -> VariantResult:
    """``row`` — what a variant's finished phases measured — ended by ``failure`` in a
    later phase: the failure's status and reason, the measurements kept, and a note of
    what was kept and what was not taken. A ``wrong`` row stays ``wrong`` (its output is
    the graver fact) and notes the failure."""
    have = {"latency": row.latency_ms, "peak memory": row.peak_memory_bytes,
            "accuracy": row.max_abs_error if row.nonfinite_values is None
            else row.nonfinite_values, "trace": row.trace}
    kept = [name for name in PHASE_RESULTS if have[name] is not None]
    missing = [name for name in planned if name not in kept]
    note = f"kept what finished before it: {', '.join(kept) or 'nothing'}"
    if missing:
        note += f"; not taken: {', '.join(missing)}"
    notes = [*row.notes, note, *failure.notes]
    warnings = list(dict.fromkeys([*row.warnings, *failure.warnings]))
    if row.status == "wrong":
        return msgspec.structs.replace(row, notes=[*notes, f"then {failure.status}: "
                                                           f"{failure.reason}"],
                                       warnings=warnings)
    return msgspec.structs.replace(row, status=failure.status, reason=failure.reason,
                                   notes=notes, warnings=warnings)


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
    if isinstance(exc, KeyboardInterrupt):  # raised by the variant: no stop signal arrived
        return status_row(variant, "error", "KeyboardInterrupt: raised by the variant itself "
                          "(no Ctrl-C or stop signal arrived); a variant must return its "
                          "output", warnings=caught)
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
