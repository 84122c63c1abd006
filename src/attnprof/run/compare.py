"""Run variants side by side on one workload and collect a :class:`RunRecord`.

Each variant is isolated: a refusal becomes ``unsupported`` with PyTorch's reason, running
out of memory becomes ``oom``, any other exception becomes ``error`` with its message, and
the next variant runs regardless. All variants see the same seeded inputs, and every output
is checked against one float64 reference per mask.

Variants are timed in interleaved rounds after all of them are built and warmed up (see
:mod:`attnprof.measure.timer`), so a machine that slows down mid-run slows them all alike.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnprof.measure.accuracy import max_abs_error, reference_output
from attnprof.measure.capture import CaptureSpec, capture_trace, trace_file_name
from attnprof.measure.device import check_against_device, default_device
from attnprof.measure.environment import collect_environment
from attnprof.measure.inputs import Inputs, grad_mode, make_inputs, make_step
from attnprof.measure.memory import profile_step
from attnprof.measure.timer import Timing, TimingPlan, Warmup, round_sizes, take_samples, warm_up
from attnprof.record.run import Ceilings, RunRecord, VariantResult
from attnprof.run.rows import failure_row, messages, ok_row, predicted_oom, row
from attnprof.spec import costs
from attnprof.spec.workload import Workload, default_workload
from attnprof.variants import Variant, resolve_variants
from attnprof.variants.base import Built

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
    #: Measure this machine's matmul and copy ceilings first (about a second), so rates
    #: can be read as shares of them.
    measure_ceilings: bool = True
    #: Write a torch.profiler trace of each variant into this folder (``None``: no trace).
    trace_dir: Path | None = None
    trace: CaptureSpec = field(default_factory=CaptureSpec)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.plan), "seed": self.seed, "measure_memory": self.measure_memory,
                "check_accuracy": self.check_accuracy, "measure_ceilings": self.measure_ceilings,
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
    if settings.measure_ceilings:
        if progress is not None:
            progress("ceilings", "measuring this machine's matmul and copy ceilings")
        record.ceilings = _ceilings(workload)
    inputs = make_inputs(workload, settings.seed)
    references: dict[int | None, torch.Tensor] = {}
    # Build and warm every variant, time them all in interleaved rounds, then finish each
    # (memory, accuracy, trace) and hand the record over after every one: what finished is
    # saved even if a later variant crashes the process.
    outcomes: list[VariantResult | _Armed] = [
        _arm(variant, workload, inputs, settings, progress) for variant in chosen]
    try:
        _time_in_rounds([o for o in outcomes if isinstance(o, _Armed)], workload, settings,
                        progress)
    except KeyboardInterrupt:
        # Stopped mid-rounds: every variant has the samples of the rounds that ran, spread
        # over the same stretch of time, so they are still comparable. Keep them (latency
        # only; memory, accuracy and trace were not taken) and stop.
        record.results.extend(_interrupted_row(o, workload, record.ceilings)
                              if isinstance(o, _Armed) else o for o in outcomes)
        if on_result is not None:
            on_result(record)
        raise
    for i, outcome in enumerate(outcomes):
        if isinstance(outcome, _Armed):
            outcomes[i] = outcome = _finish(outcome, workload, inputs, settings, references,
                                            progress, record.ceilings)
        record.results.append(outcome)
        if progress is not None:
            progress(outcome.variant, "done")
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
    """Measure one variant alone; never raises for a variant's own failure."""
    armed = _arm(variant, w, inputs, settings, progress)
    if isinstance(armed, VariantResult):
        return armed
    _time_in_rounds([armed], w, settings, progress)
    return _finish(armed, w, inputs, settings, references, progress, None)


@dataclass
class _Armed:
    """A variant built and warmed up, collecting its samples round by round."""

    variant: Variant
    built: Built
    step: Callable[[], object]
    warm: Warmup
    samples_ms: list[float] = field(default_factory=list)
    dispatch_ms: list[float] = field(default_factory=list)
    caught: list[str] = field(default_factory=list)  # PyTorch's warnings so far
    failure: VariantResult | None = None  # set when a timing round raised

    def timing(self, w: Workload) -> Timing:
        """The samples taken so far, with the warm-up's first call."""
        return Timing(self.samples_ms, self.dispatch_ms, self.warm.first_call_s,
                      self.warm.calls, device_timed=w.device.startswith("cuda"))

    @contextlib.contextmanager
    def running(self, w: Workload) -> Iterator[None]:
        """The variant's own context, grad mode, and warnings caught into ``caught``."""
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("default")  # once per call site, not once per sample
            try:
                with self.built.context(), grad_mode(w.mode):
                    yield
            finally:
                self.caught = list(dict.fromkeys([*self.caught, *messages(seen)]))


def _arm(variant: Variant, w: Workload, inputs: Inputs, settings: Settings,
         progress: Progress | None) -> VariantResult | _Armed:
    """Check support, build, run the first call (the compile) and warm up."""
    support = variant.supports(w)
    result: VariantResult | _Armed
    if not support.ok:
        result = row(variant, status="unsupported", reason=support.reason)
    elif too_big := predicted_oom(variant, w):
        result = row(variant, status="oom", reason=too_big)
    else:
        armed = None
        try:
            _phase(progress, variant, "building")
            built = variant.build(w)
            step = make_step(built.call, inputs, w.mode)
            _phase(progress, variant, "compiling" if variant.compiled else "warming up")
            armed = _Armed(variant, built, step, Warmup(0.0, 0, 0))
            with armed.running(w):
                armed.warm = warm_up(step, device=w.device, plan=settings.plan)
            result = armed
        except BaseException as exc:  # isolation: every failure becomes a row
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            result = failure_row(variant, exc, armed.caught if armed else [], w)
    _phase(progress, variant, "ready")
    return result


def _time_in_rounds(armed: list[_Armed], w: Workload, settings: Settings,
                    progress: Progress | None) -> None:
    """Take every variant's samples, a slice of each per round (see measure.timer)."""
    plans = {id(a): round_sizes(a.warm.samples, settings.plan.rounds) for a in armed}
    rounds = max((len(p) for p in plans.values()), default=0)
    for r in range(rounds):
        for a in armed:
            sizes = plans[id(a)]
            if a.failure is not None or r >= len(sizes):
                continue
            _phase(progress, a.variant, f"timing, round {r + 1} of {rounds}")
            try:
                with a.running(w):
                    a.step()  # one untimed call: the others ran since this one last did
                    samples, dispatch = take_samples(a.step, sizes[r], device=w.device)
            except BaseException as exc:  # isolation, as in _arm
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                a.failure = failure_row(a.variant, exc, a.caught, w)
                continue
            a.samples_ms.extend(samples)
            a.dispatch_ms.extend(dispatch)


def _finish(a: _Armed, w: Workload, inputs: Inputs, settings: Settings,
            references: dict[int | None, torch.Tensor],
            progress: Progress | None, ceilings: Ceilings | None) -> VariantResult:
    """Memory, accuracy and trace of a timed variant, and its row."""
    if a.failure is not None:
        return a.failure
    variant = a.variant
    try:
        memory = None
        with a.running(w):
            if settings.measure_memory:
                _phase(progress, variant, "memory")
                memory = profile_step(a.step, w.device)
        error = None
        if settings.check_accuracy:
            _phase(progress, variant, "accuracy")
            window = variant.window(w)
            if window not in references:
                references[window] = reference_output(inputs, w, window)
            with a.built.context(), grad_mode("forward"):
                out = a.built.call(inputs.q, inputs.k, inputs.v)
            error = max_abs_error(out, references[window])
            del out
        trace = None
        if settings.trace_dir is not None:
            _phase(progress, variant, "tracing")
            trace = _capture(variant, w, a.built, a.step, settings)
    except BaseException as exc:  # isolation, as in _arm
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return failure_row(variant, exc, a.caught, w)
    row = ok_row(variant, w, a.timing(w), memory, error, a.built.notes, a.caught, ceilings)
    row.trace = trace
    return row


def _interrupted_row(a: _Armed, w: Workload, ceilings: Ceilings | None) -> VariantResult:
    """The row of a variant whose timing rounds were cut short by Ctrl-C."""
    if a.failure is not None:
        return a.failure
    if not a.samples_ms:
        return row(a.variant, status="error", reason="interrupted before any sample",
                    warnings=a.caught)
    note = (f"interrupted: {len(a.samples_ms)} of {a.warm.samples} samples; memory, "
            "accuracy and trace not taken")
    return ok_row(a.variant, w, a.timing(w), None, None, (*a.built.notes, note), a.caught,
                   ceilings)


def _phase(progress: Progress | None, variant: Variant, name: str) -> None:
    if progress is not None:
        progress(variant.name, name)


def _capture(variant: Variant, w: Workload, built: Any, step: Callable[[], object],
             settings: Settings) -> str:
    """Record the variant's trace; the path goes into the record."""
    assert settings.trace_dir is not None
    path = settings.trace_dir / trace_file_name(variant.name)
    with built.context(), grad_mode(w.mode):
        capture_trace(step, variant.name, w.device, path, settings.trace,
                      metadata={"workload": w.to_dict()})
    return str(path)


def _ceilings(w: Workload) -> Ceilings:
    from attnprof.measure.ceilings import measure_ceilings

    c = measure_ceilings(w.device, w.dtype)
    return Ceilings(matmul_tflops_per_s=c.matmul_flops_per_s / 1e12,
                    bandwidth_gbytes_per_s=c.bandwidth_bytes_per_s / 1e9, method=c.method)


def _release(device: str) -> None:
    # Reference counting frees a finished variant's tensors; only CUDA needs more: a full
    # collection (0.3 s with torch loaded, so not on CPU) and the caching allocator emptied
    # so the next variant's peak is its own.
    if device.startswith("cuda"):
        import torch

        gc.collect()
        torch.cuda.empty_cache()
