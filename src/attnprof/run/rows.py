"""A variant's row in the record, from its measurements or from how it failed.

What a row says is decided here: rates and their shares of the ceilings, tolerance, the
SDPA backend from the ops seen, and, for a failure, whether it was a refusal
(``unsupported``, with PyTorch's reason), running out of memory (``oom``) or a bug
(``error``). The runner only measures and calls these.
"""

from __future__ import annotations

import warnings
from typing import Any

from attnprof.knowledge.sdpa_backends import sdpa_backend
from attnprof.measure.accuracy import TOLERANCE
from attnprof.measure.device import GiB, memory_capacity_bytes
from attnprof.measure.memory import MemoryProfile
from attnprof.measure.stats import summarize
from attnprof.measure.timer import Timing
from attnprof.record.run import Ceilings, Latency, VariantResult
from attnprof.spec import costs
from attnprof.spec.workload import Workload
from attnprof.variants import Variant

__all__ = ["failure_row", "is_oom", "messages", "ok_row", "one_line", "predicted_oom", "row",
           "share"]


def share(rate: float | None, ceiling: float | None) -> float | None:
    """``rate`` as a share of ``ceiling`` (None when either is unknown)."""
    return rate / ceiling if rate is not None and ceiling else None


def row(variant: Variant, **fields: Any) -> VariantResult:
    """A result row for ``variant`` with the given fields."""
    return VariantResult(variant=variant.name, family=variant.family, summary=variant.summary,
                         **fields)


def ok_row(variant: Variant, w: Workload, timing: Timing, memory: MemoryProfile | None,
           error: float | None, notes: tuple[str, ...], caught: list[str],
           ceilings: Ceilings | None) -> VariantResult:
    """The row of a measured variant: latency statistics, rates, memory, error, notes."""
    stats = summarize(timing.samples_ms)
    seconds = stats.median / 1e3
    flops = costs.step_flops(w, variant.window(w))
    moved = costs.step_bytes(w)
    tol = TOLERANCE[w.dtype]
    tflops = costs.achieved_rate(flops, seconds)
    gbps = costs.achieved_rate(moved, seconds)
    backend = sdpa_backend(memory.op_names) if memory else None
    return row(
        variant, status="ok",
        latency_ms=Latency(median=stats.median, iqr=stats.iqr, q1=stats.q1, q3=stats.q3,
                           min=stats.minimum, max=stats.maximum, count=stats.count,
                           noisy=stats.noisy, samples=timing.samples_ms),
        timing="cuda-events" if timing.device_timed else "wall",
        cpu_dispatch_ms=summarize(timing.dispatch_ms).median,
        device_ms=stats.median if timing.device_timed else None,
        compile_time_s=timing.first_call_s if variant.compiled else None,
        first_call_s=timing.first_call_s,
        peak_memory_bytes=memory.peak_bytes if memory else None,
        peak_memory_method=memory.method if memory else None,
        flops=flops, flops_convention=costs.FLOPS_CONVENTION,
        tflops_per_s=None if tflops is None else tflops / 1e12,
        bytes_moved=moved, gbytes_per_s=None if gbps is None else gbps / 1e9,
        flops_of_ceiling=share(tflops, ceilings.matmul_tflops_per_s * 1e12 if ceilings else None),
        bandwidth_of_ceiling=share(gbps, ceilings.bandwidth_gbytes_per_s * 1e9
                                    if ceilings else None),
        max_abs_error=error, tolerance=tol,
        within_tolerance=None if error is None else bool(error <= tol),
        sdpa_backend=backend,
        ops=list(memory.op_names) if memory else [],
        notes=list(notes), warnings=caught,
    )


def failure_row(variant: Variant, exc: BaseException, caught: list[str],
                w: Workload) -> VariantResult:
    """The row of a variant that raised: ``unsupported`` for a refusal, else oom or error."""
    refusal = variant.explain_refusal(exc, caught, w)
    if refusal is None and isinstance(exc, NotImplementedError):
        # PyTorch's way of declaring a combination unsupported; its message says which.
        refusal = f"PyTorch: {one_line(str(exc))}"
    if refusal is not None:
        return row(variant, status="unsupported", reason=refusal, warnings=caught)
    message = f"{type(exc).__name__}: {one_line(str(exc))}"
    status = "oom" if is_oom(exc) else "error"
    return row(variant, status=status, reason=message, warnings=caught)


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` means the device (or host) ran out of memory."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text


def predicted_oom(variant: Variant, w: Workload) -> str | None:
    """A reason not to run a variant that would certainly exhaust memory, else ``None``.

    On CPU the kernel's OOM killer ends the whole process instead of raising, so a variant
    that materialises B·H·Sq·Sk fp32 scores far beyond memory must not be attempted.
    """
    if not variant.materializes_scores:
        return None
    need = costs.resident_bytes(w) + 3 * costs.score_matrix_bytes(w, element_bytes=4)
    have = memory_capacity_bytes(w.device)
    if need <= 0.9 * have:
        return None
    return (f"not run: materialising the scores needs about {need / GiB:.1f} GiB, "
            f"{w.device} has {have / GiB:.1f} GiB; use a fused variant or a smaller shape")


def messages(seen: list[warnings.WarningMessage]) -> list[str]:
    """Caught warnings as distinct one-line messages, in the order first seen."""
    return list(dict.fromkeys(one_line(str(m.message)) for m in seen))


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
