"""Run variants side by side on one workload and collect a :class:`RunRecord`.

Each variant is isolated: a refusal becomes ``unsupported`` with PyTorch's reason, running
out of memory becomes ``oom``, any other exception becomes ``error`` with its message, and
the next variant runs regardless. All variants see the same seeded inputs, and every output
is checked against one float64 reference per mask.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnprof import costs
from attnprof.analysis.sdpa_backend import sdpa_backend
from attnprof.device import GiB, check_against_device, default_device, memory_capacity_bytes
from attnprof.environment import collect_environment
from attnprof.measure.accuracy import TOLERANCE, max_abs_error, reference_output
from attnprof.measure.inputs import Inputs, grad_mode, make_inputs, make_step
from attnprof.measure.memory import profile_step
from attnprof.measure.stats import summarize
from attnprof.measure.timer import TimingPlan, time_step
from attnprof.record import Latency, RunRecord, VariantResult
from attnprof.trace.capture import CaptureSpec, capture_trace, trace_file_name
from attnprof.variants import Variant, resolve_variants
from attnprof.workload import Workload, default_workload

if TYPE_CHECKING:
    import torch

Progress = Callable[[str, str], None]
"""Called as ``progress(variant_name, phase)`` while a variant is being measured."""


@dataclass(frozen=True)
class Settings:
    """How carefully to measure (timing budget, seed, optional passes)."""

    plan: TimingPlan = field(default_factory=TimingPlan)
    seed: int = 0
    measure_memory: bool = True
    check_accuracy: bool = True
    #: Write a torch.profiler trace of each variant into this folder (``None``: no trace).
    trace_dir: Path | None = None
    trace: CaptureSpec = field(default_factory=CaptureSpec)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.plan), "seed": self.seed, "measure_memory": self.measure_memory,
                "check_accuracy": self.check_accuracy,
                "trace_dir": None if self.trace_dir is None else str(self.trace_dir),
                "trace_steps": self.trace.steps}


def prepare(workload: Workload | None = None,
            variants: Sequence[str | Variant] | None = None,
            **fields: Any) -> tuple[Workload, list[Variant]]:
    """Validate the workload against the device and resolve the variant names.

    Everything a user can get wrong is checked here, before any measurement or output.
    """
    fields = {k: v for k, v in fields.items() if v is not None}
    if workload is None:
        device = fields.setdefault("device", default_device())
        workload = default_workload(device.split(":")[0], **fields)
    elif fields:
        workload = workload.replace(**fields)
    workload = workload.validate()
    check_against_device(workload)
    return workload, resolve_variants(variants)


def compare(workload: Workload | None = None,
            variants: Sequence[str | Variant] | None = None, *,
            settings: Settings | None = None, progress: Progress | None = None,
            on_result: Callable[[RunRecord], None] | None = None,
            **fields: Any) -> RunRecord:
    """Measure ``variants`` (default: every built-in) on ``workload`` and return the record.

    Workload fields may be given as keywords (``compare(seq=1024, dtype="bf16")``); they
    override ``workload`` or the device's default. ``on_result`` is called with the record
    after every variant, so a caller can save progress as it goes.
    """
    workload, chosen = prepare(workload, variants, **fields)
    settings = settings or Settings()
    record = RunRecord(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        environment=collect_environment(workload.device),
        workload=workload.to_dict(),
        settings=settings.to_dict(),
        flops_convention=costs.FLOPS_CONVENTION,
    )
    inputs = make_inputs(workload, settings.seed)
    references: dict[int | None, torch.Tensor] = {}
    for variant in chosen:
        record.results.append(
            measure_variant(variant, workload, inputs, settings, references, progress))
        if on_result is not None:
            on_result(record)
        _release(workload.device)
    record.status = "complete"
    if on_result is not None:
        on_result(record)
    return record


def measure_variant(variant: Variant, w: Workload, inputs: Inputs, settings: Settings,
                    references: dict[int | None, torch.Tensor],
                    progress: Progress | None = None) -> VariantResult:
    """Measure one variant; never raises for a variant's own failure."""
    def phase(name: str) -> None:
        if progress is not None:
            progress(variant.name, name)

    base = {"variant": variant.name, "family": variant.family, "summary": variant.summary}
    support = variant.supports(w)
    if not support.ok:
        return VariantResult(**base, status="unsupported", reason=support.reason)
    too_big = _predicted_oom(variant, w)
    if too_big:
        return VariantResult(**base, status="oom", reason=too_big)
    caught: list[str] = []
    try:
        phase("building")
        built = variant.build(w)
        step = make_step(built.call, inputs, w.mode)
        phase("compiling" if variant.compiled else "timing")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("default")  # once per call site, not once per sample
            try:
                with built.context(), grad_mode(w.mode):
                    timing = time_step(step, device=w.device, plan=settings.plan)
                    memory = None
                    if settings.measure_memory:
                        phase("memory")
                        memory = profile_step(step, w.device)
            finally:
                caught = _messages(seen)
        error = None
        if settings.check_accuracy:
            phase("accuracy")
            window = variant.window(w)
            if window not in references:
                references[window] = reference_output(inputs, w, window)
            with built.context(), grad_mode("forward"):
                out = built.call(inputs.q, inputs.k, inputs.v)
            error = max_abs_error(out, references[window])
            del out
        trace = None
        if settings.trace_dir is not None:
            phase("tracing")
            trace = _capture(variant, w, built, step, settings)
    except BaseException as exc:  # noqa: BLE001 - isolation: every failure becomes a row
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return _failure(base, variant, exc, caught, w)
    row = _ok_row(base, variant, w, timing, memory, error, built.notes, caught)
    row.trace = trace
    return row


def _capture(variant: Variant, w: Workload, built: Any, step: Callable[[], object],
             settings: Settings) -> str:
    """Record the variant's trace; the path goes into the record."""
    assert settings.trace_dir is not None
    path = settings.trace_dir / trace_file_name(variant.name)
    with built.context(), grad_mode(w.mode):
        capture_trace(step, variant.name, w.device, path, settings.trace,
                      metadata={"workload": w.to_dict()})
    return str(path)


def _ok_row(base: dict[str, str], variant: Variant, w: Workload, timing: Any, memory: Any,
            error: float | None, notes: tuple[str, ...], caught: list[str]) -> VariantResult:
    stats = summarize(timing.samples_ms)
    seconds = stats.median / 1e3
    flops = costs.step_flops(w, variant.window(w))
    moved = costs.step_bytes(w)
    tol = TOLERANCE[w.dtype]
    tflops = costs.achieved_rate(flops, seconds)
    gbps = costs.achieved_rate(moved, seconds)
    backend = sdpa_backend(memory.op_names) if memory else None
    return VariantResult(
        **base, status="ok",
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
        max_abs_error=error, tolerance=tol,
        within_tolerance=None if error is None else bool(error <= tol),
        sdpa_backend=backend,
        ops=list(memory.op_names) if memory else [],
        notes=list(notes), warnings=caught,
    )


def _failure(base: dict[str, str], variant: Variant, exc: BaseException, caught: list[str],
             w: Workload) -> VariantResult:
    refusal = variant.explain_refusal(exc, caught, w)
    if refusal is None and isinstance(exc, NotImplementedError):
        # PyTorch's way of declaring a combination unsupported; its message says which.
        refusal = f"PyTorch: {_one_line(str(exc))}"
    if refusal is not None:
        return VariantResult(**base, status="unsupported", reason=refusal, warnings=caught)
    message = f"{type(exc).__name__}: {_one_line(str(exc))}"
    status = "oom" if _is_oom(exc) else "error"
    return VariantResult(**base, status=status, reason=message, warnings=caught)


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return "out of memory" in text or "can't allocate memory" in text


def _predicted_oom(variant: Variant, w: Workload) -> str | None:
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


def _messages(seen: list[warnings.WarningMessage]) -> list[str]:
    return list(dict.fromkeys(_one_line(str(m.message)) for m in seen))


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _release(device: str) -> None:
    # Reference counting frees a finished variant's tensors; only CUDA needs more: a full
    # collection (0.3 s with torch loaded, so not on CPU) and the caching allocator emptied
    # so the next variant's peak is its own.
    if device.startswith("cuda"):
        import torch

        gc.collect()
        torch.cuda.empty_cache()
