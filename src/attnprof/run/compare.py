"""Run variants side by side on one workload and collect a comparison record.

Each variant is isolated: a refusal becomes ``unsupported`` with PyTorch's reason, running
out of memory becomes ``oom``, running past ``Settings.variant_timeout_s`` in one phase
becomes ``timeout``, any other exception (``SystemExit`` from user code included) becomes
``error`` with its message, and the next variant runs regardless. All variants see the same
seeded inputs — checked after each of a variant's phases and put back if it changed them
(:mod:`attnprof.run.guards`) — every output's shape and dtype is checked on the warm-up
calls, and every output is checked against one float64 reference per mask. CPU variants
run in the allocator state the settings name (:mod:`attnprof.measure.allocator`).

Variants are timed in interleaved rounds after all of them are built and warmed up (see
:mod:`attnprof.measure.timer`), so a machine that slows down mid-run slows them all alike.
A point runs here, in this process (:func:`run_point`); an executor
(:mod:`attnprof.run.executors`) may run it elsewhere and hand back the same record.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnprof.formatting import one_line
from attnprof.measure.accuracy import max_abs_error, reference_output
from attnprof.measure.allocator import minor_faults, release_free_memory, set_cpu_allocator
from attnprof.measure.capture import capture_trace, trace_file_name
from attnprof.measure.deadline import TimeLimitExceeded, time_limit
from attnprof.measure.device import check_against_device, default_device
from attnprof.measure.inputs import Inputs, grad_mode, make_inputs, make_step
from attnprof.measure.memory import profile_step
from attnprof.measure.timer import Warmup, round_sizes, take_samples, warm_up
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.record.environment import Ceilings
from attnprof.run.guards import InputGuard, checked_call, isolated
from attnprof.run.measurements import Candidate, Measurements
from attnprof.run.point import OWN_STEPS, Point, RecordKind, empty_record
from attnprof.run.rows import (
    failure_row,
    is_oom,
    predicted_oom,
    ran_out_of_memory,
    result_row,
    status_row,
)
from attnprof.spec.settings import Settings
from attnprof.spec.workload import Workload, default_workload
from attnprof.variants import Variant, resolve_variants

if TYPE_CHECKING:
    import torch

    from attnprof.run.executors import Executor

__all__ = ["Progress", "Settings", "compare", "prepare", "run_point"]

Progress = Callable[[str, str], None]
"""Called as ``progress(variant_name, phase)`` while a variant is being measured."""
OnRecord = Callable[[CompareRecord], None]
"""Called with the record after every variant, so a caller can save progress as it goes."""


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
            on_result: OnRecord | None = None, executor: Executor | None = None,
            kind: RecordKind = "compare", ceilings: Ceilings | None = None,
            **fields: Any) -> CompareRecord:
    """Measure ``variants`` (default: every built-in) on ``workload`` and return the record.

    Workload fields may be given as keywords (``compare(seq=1024, dtype="bf16")``); they
    override ``workload`` or the device's default. ``on_result`` is called with the record
    after every variant, so a caller can save progress as it goes. ``executor`` runs the
    point elsewhere (e.g. :class:`~attnprof.run.executors.process.ProcessExecutor`, a
    worker process a crashing variant cannot take down); by default it runs here.
    ``ceilings`` measured before (``attnprof env``'s cache) are used instead of measuring
    them again.
    """
    workload, chosen = prepare(workload, variants, **fields)
    settings = (settings or Settings()).validate()
    point = Point(workload=workload, variants=tuple(v.name for v in chosen),
                  settings=settings, kind=kind, ceilings=ceilings)
    if executor is None:
        return run_point(point, chosen, progress=progress, on_record=on_result)
    return executor.run(point, progress=progress, on_record=on_result)


def run_point(point: Point, variants: Sequence[Variant] | None = None, *,
              progress: Progress | None = None, on_record: OnRecord | None = None,
              before_variants: Callable[[], None] | None = None,
              stop_after_oom: bool = False) -> CompareRecord:
    """Measure one point in this process; ``variants`` are the point's, already resolved
    (resolved from its names when ``None``).

    ``before_variants`` is called once attnprof's own memory is in place — the ceilings
    measured, the inputs, their guard copy and the float64 references made — and before
    any variant is built (a worker caps its memory there, so the cap is the variants').
    With ``stop_after_oom``, a variant that runs out of memory ends the run: the record
    then holds the rows final so far (status ``partial``), and the caller runs the other
    variants again in a fresh process, so nothing that variant left behind counts against
    them."""
    workload, settings = point.workload, point.settings
    chosen = list(variants) if variants is not None else resolve_variants(point.variants)
    record = empty_record(point)
    # Before anything allocates what it measures: the ceilings and the variants all run in
    # the stated allocator state (a no-op for "system").
    allocator_note = set_cpu_allocator(settings.cpu_allocator)
    if settings.measure_ceilings and record.ceilings is None:
        if progress is not None:
            progress(OWN_STEPS[0], "measuring this machine's matmul and copy ceilings")
        record.ceilings = _ceilings(workload)
        release_free_memory()  # the ceilings' buffers: not what the variants should reuse
    inputs = make_inputs(workload, settings.seed)
    guard = InputGuard(inputs)
    references = _references(chosen, workload, inputs, settings, progress)
    if before_variants is not None:
        before_variants()
    # Build and warm every variant, time them all in interleaved rounds, then finish each
    # (memory, accuracy, trace) and hand the record over after every one: what finished is
    # saved even if a later variant crashes the process.
    outcomes: list[VariantResult | Candidate] = []
    for variant in chosen:
        outcomes.append(_arm(variant, workload, inputs, settings, progress, guard))
        if stop_after_oom and _ran_out(outcomes[-1]):
            return _hand_over(record, outcomes, on_record)
    candidates = [o for o in outcomes if isinstance(o, Candidate)]
    if allocator_note:  # the state could not be set: every measured row says so
        for candidate in candidates:
            candidate.measured.notes.append(allocator_note)
    try:
        if _time_in_rounds(candidates, workload, settings, progress, guard,
                           stop_after_oom=stop_after_oom):
            return _hand_over(record, outcomes, on_record)
    except KeyboardInterrupt:
        # Stopped mid-rounds: every variant has the samples of the rounds that ran, spread
        # over the same stretch of time, so they are still comparable. Keep them (latency
        # only; memory, accuracy and trace were not taken) and stop.
        record.results.extend(_interrupted_row(o, workload, record.ceilings)
                              if isinstance(o, Candidate) else o for o in outcomes)
        if on_record is not None:
            on_record(record)
        raise
    for outcome in outcomes:
        row = (_finish(outcome, workload, inputs, settings, references, progress,
                       record.ceilings, guard)
               if isinstance(outcome, Candidate) else outcome)
        record.results.append(row)
        _phase(progress, row.variant, "done")
        if on_record is not None:
            on_record(record)
        _release(workload.device)
        if stop_after_oom and _ran_out(row):
            return record  # partial: the caller runs the rest in a fresh process
    record.status = "complete"
    if on_record is not None:
        on_record(record)
    return record


def _arm(variant: Variant, workload: Workload, inputs: Inputs, settings: Settings,
         progress: Progress | None, guard: InputGuard) -> VariantResult | Candidate:
    """Check support, build, run the first call (the compile) and warm up; the warm-up
    calls check the output's shape and dtype."""
    support = variant.supports(workload)
    result: VariantResult | Candidate
    if not support.ok:
        result = status_row(variant, "unsupported", support.reason)
    elif too_big := predicted_oom(variant, workload):
        result = status_row(variant, "oom", too_big)
    else:
        candidate = None
        try:
            with time_limit(settings.variant_timeout_s, "building and warming up"):
                _phase(progress, variant.name, "building")
                built = variant.build(workload)
                step = make_step(built.call, inputs, workload.mode)
                checked = make_step(checked_call(built.call, workload), inputs, workload.mode)
                _phase(progress, variant.name,
                       "compiling" if variant.compiled else "warming up")
                candidate = Candidate(variant, built, step,
                                      Measurements(Warmup(0.0, 0, 0), notes=list(built.notes)))
                with candidate.running(workload):
                    candidate.measured.warmup = warm_up(checked, device=workload.device,
                                                        plan=settings.plan)
            result = candidate
        except BaseException as exc:  # isolation: every failure becomes a row
            if not isolated(exc):
                raise
            caught = candidate.measured.warnings if candidate else []
            result = failure_row(variant, exc, caught, workload)
        if changed := guard.check("building and warming up"):
            result = status_row(variant, "error", changed,
                                warnings=candidate.measured.warnings if candidate else [])
        if not isinstance(result, Candidate):
            _release(workload.device)  # what a failed variant allocated is not to be kept
    _phase(progress, variant.name, "ready")
    return result


def _time_in_rounds(candidates: list[Candidate], workload: Workload, settings: Settings,
                    progress: Progress | None, guard: InputGuard, *,
                    stop_after_oom: bool = False) -> bool:
    """Take every variant's samples, a slice of each per round (see measure.timer), with
    the minor page faults each slice took; True when stopped by a variant that ran out of
    memory (with ``stop_after_oom``)."""
    plans = {id(c): round_sizes(c.measured.warmup.samples, settings.plan.rounds)
             for c in candidates}
    rounds = max((len(p) for p in plans.values()), default=0)
    for r in range(rounds):
        for candidate in candidates:
            sizes = plans[id(candidate)]
            if candidate.failure is not None or r >= len(sizes):
                continue
            phase = f"timing, round {r + 1} of {rounds}"
            _phase(progress, candidate.variant.name, phase)
            try:
                with time_limit(settings.variant_timeout_s, phase), \
                        candidate.running(workload):
                    candidate.step()  # one untimed call: the others ran since this one did
                    before = minor_faults()
                    samples, dispatch = take_samples(candidate.step, sizes[r],
                                                     device=workload.device)
                    after = minor_faults()
            except BaseException as exc:  # isolation, as in _arm
                if not isolated(exc):
                    raise
                candidate.failure = failure_row(candidate.variant, exc,
                                                candidate.measured.warnings, workload)
            else:
                faults = None if before is None or after is None else after - before
                candidate.measured.add_samples(samples, dispatch, faults)
            if changed := guard.check(phase):  # worse than any failure: it hurts the others
                candidate.failure = status_row(candidate.variant, "error", changed,
                                               warnings=candidate.measured.warnings)
            if stop_after_oom and candidate.failure is not None and _ran_out(candidate.failure):
                return True
    return False


def _references(chosen: Sequence[Variant], workload: Workload, inputs: Inputs,
                settings: Settings, progress: Progress | None
                ) -> dict[int | None, torch.Tensor] | str:
    """The float64 reference output per mask the variants use, made before any variant
    runs: attnprof's memory, in place before a worker's cap (see :func:`run_point`). Within
    ``--variant-timeout`` and the memory there is: else why no accuracy is checked, which
    every measured row then says (never a variant's failure: the reference is attnprof's)."""
    if not settings.check_accuracy:
        return {}
    _phase(progress, OWN_STEPS[1], "computing the float64 reference")
    windows = dict.fromkeys(v.window(workload) for v in chosen)
    try:
        with time_limit(settings.variant_timeout_s, "computing the float64 reference"):
            references = {w: reference_output(inputs, workload, w) for w in windows}
    except TimeLimitExceeded:
        return (f"accuracy not checked: the float64 reference did not finish within "
                f"{settings.variant_timeout_s:g} s (--variant-timeout)")
    except (MemoryError, RuntimeError) as exc:
        if not is_oom(exc):
            raise
        return "accuracy not checked: the float64 reference did not fit in memory"
    finally:
        release_free_memory()  # its temporaries: not what the variants should reuse
    return references


def _ran_out(outcome: VariantResult | Candidate) -> bool:
    """Whether ``outcome`` is a variant that ran out of memory on a real allocation."""
    return isinstance(outcome, VariantResult) and ran_out_of_memory(outcome)


def _hand_over(record: CompareRecord, outcomes: list[VariantResult | Candidate],
               on_record: OnRecord | None) -> CompareRecord:
    """The record after a variant ran out of memory: every row final so far (refusals,
    failures, the out-of-memory one), not the variants still being measured."""
    for outcome in outcomes:
        row = outcome if isinstance(outcome, VariantResult) else outcome.failure
        if row is not None:
            record.results.append(row)
    if on_record is not None:
        on_record(record)
    return record


def _finish(candidate: Candidate, workload: Workload, inputs: Inputs, settings: Settings,
            references: dict[int | None, torch.Tensor] | str, progress: Progress | None,
            ceilings: Ceilings | None, guard: InputGuard) -> VariantResult:
    """Memory, accuracy and trace of a timed variant, then its row, built once."""
    if candidate.failure is not None:
        return candidate.failure
    variant, measured = candidate.variant, candidate.measured
    phase = "measuring memory, accuracy and trace"
    failure = None
    try:
        with time_limit(settings.variant_timeout_s, phase):
            _measure_once(candidate, workload, inputs, settings, references, progress)
    except BaseException as exc:  # isolation, as in _arm
        if not isolated(exc):
            raise
        failure = failure_row(variant, exc, measured.warnings, workload)
    if changed := guard.check(phase):  # worse than any failure: it hurts the others
        return status_row(variant, "error", changed, warnings=measured.warnings)
    if failure is not None:
        return failure
    row = result_row(variant, workload, measured, ceilings)
    if row.trace is not None:
        _phase(progress, variant.name, "analysing the trace")
        _attach_analysis(row, workload)
    return row


def _measure_once(candidate: Candidate, workload: Workload, inputs: Inputs,
                  settings: Settings, references: dict[int | None, torch.Tensor] | str,
                  progress: Progress | None) -> None:
    """Peak memory, error against the reference, and the trace of one variant."""
    variant, measured = candidate.variant, candidate.measured
    with candidate.running(workload):
        if settings.measure_memory:
            _phase(progress, variant.name, "memory")
            measured.memory = profile_step(candidate.step, workload.device)
    if isinstance(references, str):  # no reference to check against: say so
        measured.notes.append(references)
    elif settings.check_accuracy:
        _phase(progress, variant.name, "accuracy")
        window = variant.window(workload)
        with candidate.built.context(), grad_mode("forward"):
            out = candidate.built.call(inputs.q, inputs.k, inputs.v)
        measured.error = max_abs_error(out, references[window])
        del out
    if settings.trace_dir is not None:
        _phase(progress, variant.name, "tracing")
        try:
            measured.trace = _capture(candidate, workload, settings)
        except Exception as exc:  # the folder or the profiler: keep what was measured
            measured.notes.append(f"trace not written: {type(exc).__name__}: "
                                  f"{one_line(str(exc), 200)}")


def _interrupted_row(candidate: Candidate, workload: Workload,
                     ceilings: Ceilings | None) -> VariantResult:
    """The row of a variant whose timing rounds were cut short by Ctrl-C."""
    if candidate.failure is not None:
        return candidate.failure
    measured = candidate.measured
    if not measured.samples_ms:
        return status_row(candidate.variant, "error", "interrupted before any sample",
                          warnings=measured.warnings)
    measured.notes.append(f"interrupted: {len(measured.samples_ms)} of "
                          f"{measured.warmup.samples} samples; memory, accuracy and trace "
                          "not taken")
    return result_row(candidate.variant, workload, measured, ceilings)


def _phase(progress: Progress | None, variant: str, name: str) -> None:
    if progress is not None:
        progress(variant, name)


def _capture(candidate: Candidate, workload: Workload, settings: Settings) -> str:
    """Record the variant's trace; the path goes into the record."""
    assert settings.trace_dir is not None
    path = Path(settings.trace_dir) / trace_file_name(candidate.variant.name)
    with candidate.built.context(), grad_mode(workload.mode):
        capture_trace(candidate.step, candidate.variant.name, workload.device, path,
                      settings.trace, metadata={"workload": workload.to_dict()})
    return str(path)


def _attach_analysis(row: VariantResult, workload: Workload) -> None:
    """Explain the trace just written, with the row's warnings as evidence."""
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    assert row.trace is not None
    row.analysis = analyze_trace(load_trace(row.trace), result=row, workload=workload)


def _ceilings(workload: Workload) -> Ceilings:
    from attnprof.measure.ceilings import measure_ceilings

    return measure_ceilings(workload.device, workload.dtype).as_record()


def _release(device: str) -> None:
    # Reference counting frees a finished (or failed) variant's tensors. The host allocator
    # keeps what they used in the "reuse" state: give it back, as CUDA's cache is emptied
    # below, so that what one variant held does not count against the next (a worker's
    # memory limit, the memory the next variant is checked against).
    release_free_memory()
    # CUDA needs more: a full collection (0.3 s with torch loaded, so not on CPU) and the
    # caching allocator emptied so the next variant's peak is its own.
    if device.startswith("cuda"):
        import torch

        gc.collect()
        torch.cuda.empty_cache()
