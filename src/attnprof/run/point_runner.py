"""One point measured in this process: every variant's phases, with the guards around them.

A :class:`PointRunner` builds and warms every variant, times them all in interleaved
rounds, then finishes each (memory, accuracy, trace) and builds its row once. Each phase
that runs the variant's code goes through :meth:`PointRunner._guarded`: it runs under
``--variant-timeout``, an exception of any type from it becomes the variant's row, the
shared inputs and torch's global settings are put back after it, and only a stop signal
goes on up. A failure keeps what the phases before it measured.
:func:`run_point` is the way in.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from attnprof.errors import UsageError
from attnprof.formatting import one_line
from attnprof.measure.accuracy import output_error, reference_output, scored_rows
from attnprof.measure.allocator import (
    heap_bytes,
    minor_faults,
    release_free_memory,
    set_cpu_allocator,
    settle_heap,
)
from attnprof.measure.capture import capture_trace, trace_file_name
from attnprof.measure.contention import cpu_wait_s, waited_s
from attnprof.measure.deadline import TimeLimitExceeded, time_limit
from attnprof.measure.inputs import grad_mode, make_inputs, make_step
from attnprof.measure.memory import profile_step
from attnprof.measure.threads import measuring_threads
from attnprof.measure.timer import (
    Warmup,
    interleaved_rounds,
    round_sizes,
    take_samples,
    warm_up,
)
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.record.environment import Ceilings
from attnprof.run import phases
from attnprof.run.guards import InputGuard, checked_call
from attnprof.run.measurements import Candidate, Measurements
from attnprof.run.point import OWN_STEPS, Point, empty_record
from attnprof.run.precision import accuracy_call, precision_support, with_precision
from attnprof.run.rows import (
    failure_row,
    is_oom,
    kept_row,
    planned_results,
    predicted_oom,
    ran_out_of_memory,
    result_row,
    state_notes,
    status_row,
)
from attnprof.signals import raise_if_stopped, reraise_stop, stop_signals_as_interrupts
from attnprof.torch_state import TorchState
from attnprof.variants import Variant, resolve_variants
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

if TYPE_CHECKING:
    import torch

__all__ = ["OnKept", "OnRecord", "PointRunner", "Progress", "run_point"]

Progress = Callable[[str, str], None]
"""Called as ``progress(variant_name, phase)`` while a variant is being measured."""
OnRecord = Callable[[CompareRecord], None]
"""Called with the record after every variant, so a caller can save progress as it goes."""
OnKept = Callable[[VariantResult], None]
"""Called with a variant's row as it stands after each of its phases: what a worker hands
its parent, so that a variant killed in a later phase keeps what finished."""


def run_point(point: Point, variants: Sequence[Variant] | None = None, *,
              progress: Progress | None = None, on_record: OnRecord | None = None,
              on_kept: OnKept | None = None, before_variants: Callable[[], None] | None = None,
              stop_after_oom: bool = False) -> CompareRecord:
    """Measure one point in this process; ``variants`` are the point's, already resolved
    (resolved from its names when ``None``).

    Only a stop signal (Ctrl-C, SIGTERM, SIGHUP) ends it early, raised as
    :class:`~attnprof.signals.Terminated` once the finished rows are handed to
    ``on_record``; whatever a variant raises, of any type, is that variant's row.

    ``before_variants`` is called once attnprof's own memory is in place — the ceilings
    measured, the inputs, their guard copy and the float64 references made, the profiler
    started — and before any variant is built (a worker caps its memory there, so the cap
    is the variants'). With ``stop_after_oom``, a variant that runs out of memory ends the
    run: the record then holds the rows final so far (status ``partial``), and the caller
    runs the other variants again in a fresh process, so nothing that variant left behind
    counts against them.
    """
    with stop_signals_as_interrupts():
        runner = PointRunner(point, progress, on_kept, stop_after_oom=stop_after_oom)
        return runner.measure(variants, on_record, before_variants=before_variants)


class PointRunner:
    """One point being measured: what its variants share (workload, settings, inputs, the
    guards of inputs and of torch's state) and the phases each variant goes through."""

    def __init__(self, point: Point, progress: Progress | None, on_kept: OnKept | None,
                 *, stop_after_oom: bool = False) -> None:
        self.point, self.workload, self.settings = point, point.workload, point.settings
        self.progress, self.on_kept = progress, on_kept
        self.stop_after_oom = stop_after_oom
        self.ceilings: Ceilings | None = None
        self.references: dict[int | None, torch.Tensor] | str = {}

    def measure(self, variants: Sequence[Variant] | None, on_record: OnRecord | None, *,
                before_variants: Callable[[], None] | None = None) -> CompareRecord:
        """Measure every variant (the point's, resolved by name when ``None``); the
        record goes to ``on_record`` after every variant (see
        :func:`attnprof.run.compare.run_point` for ``before_variants``). Everything,
        the ceilings and the environment's thread count included, runs on the settings'
        intra-op threads."""
        with measuring_threads(self.settings.threads):
            return self._measure(variants, on_record, before_variants=before_variants)

    def _measure(self, variants: Sequence[Variant] | None, on_record: OnRecord | None, *,
                 before_variants: Callable[[], None] | None) -> CompareRecord:
        workload, settings = self.workload, self.settings
        chosen = list(variants) if variants is not None else resolve_variants(
            self.point.variants)
        record = empty_record(self.point)
        # Before anything allocates what it measures: the ceilings and the variants all run
        # in the stated allocator state (a no-op for "system").
        allocator_note = set_cpu_allocator(settings.cpu_allocator)
        if settings.measure_ceilings and record.ceilings is None:
            self._phase(OWN_STEPS[0], "measuring this machine's matmul and copy ceilings")
            record.ceilings = _ceilings(workload)
        self.ceilings = record.ceilings
        self.inputs = make_inputs(workload, settings.seed)
        self.guard = InputGuard(self.inputs)
        self.references = self._references(chosen)
        if settings.measure_memory:
            self._start_profiler()
        if before_variants is not None:
            before_variants()
        self.state = TorchState()  # as the run found it: put back after every phase
        # Build and warm every variant, time them all in interleaved rounds, then finish
        # each (memory, accuracy, trace) and hand the record over after every one: what
        # finished is saved even if a later variant crashes the process.
        heap_before = heap_bytes()
        outcomes: list[VariantResult | Candidate] = []
        for variant in chosen:
            outcomes.append(self._arm(variant))
            if self.stop_after_oom and _ran_out(outcomes[-1]):
                return self._hand_over(record, outcomes, on_record)
        candidates = [o for o in outcomes if isinstance(o, Candidate)]
        if workload.device_type == "cpu":  # what the rounds will reuse, in place once
            heap_after = heap_bytes()
            settle_heap(heap_after - heap_before
                        if heap_before is not None and heap_after is not None else 0)
        if allocator_note:  # the state could not be set: every measured row says so
            for candidate in candidates:
                candidate.measured.notes.append(allocator_note)
        try:
            if self._time_in_rounds(candidates):
                return self._hand_over(record, outcomes, on_record)
        except KeyboardInterrupt:
            # Stopped mid-rounds: every variant has the samples of the rounds that ran,
            # spread over the same stretch of time, so they are still comparable. Keep them
            # (latency only; memory, accuracy and trace were not taken) and stop.
            record.results.extend(self._interrupted_row(o) if isinstance(o, Candidate)
                                  else o for o in outcomes)
            if on_record is not None:
                on_record(record)
            raise
        for outcome in outcomes:
            row = self._finish(outcome) if isinstance(outcome, Candidate) else outcome
            record.results.append(row)
            self._phase(row.variant, phases.DONE)
            if on_record is not None:
                on_record(record)
            _release(workload.device)
            if self.stop_after_oom and _ran_out(row):
                return record  # partial: the caller runs the rest in a fresh process
        record.status = "complete"
        if on_record is not None:
            on_record(record)
        return record

    # ----- the phases of one variant ----------------------------------------------------
    def _arm(self, variant: Variant) -> VariantResult | Candidate:
        """Check support, build, run the first call (the compile) and warm up; the warm-up
        calls check the output's shape and dtype."""
        workload = self.workload
        support = precision_support(variant, workload, variant.supports(workload))
        result: VariantResult | Candidate
        if not support.ok:
            result = status_row(variant, "unsupported", support.reason)
        elif too_big := predicted_oom(variant, workload):
            result = status_row(variant, "oom", too_big)
        else:
            measured = Measurements(Warmup(0.0, 0, 0))
            armed: list[Candidate] = []

            def build_and_warm_up() -> None:
                self._phase(variant.name, phases.BUILDING)
                built = with_precision(variant.build(workload), workload)
                measured.notes.extend(built.notes)
                step = make_step(built.call, self.inputs, workload.mode)
                checked = make_step(checked_call(built.call, workload), self.inputs,
                                    workload.mode)
                self._phase(variant.name,
                            phases.COMPILING if variant.compiled else phases.WARMING_UP)
                candidate = Candidate(variant, built, step, measured)
                with candidate.running(workload):
                    measured.warmup = warm_up(checked, device=workload.device,
                                              plan=self.settings.plan)
                armed.append(candidate)

            failure, _ = self._guarded(variant, measured, phases.BUILDING, build_and_warm_up)
            result = armed[0] if failure is None else _with_state(failure, measured)
            if not isinstance(result, Candidate):
                _release(workload.device)  # what a failed variant allocated is not to be kept
        self._phase(variant.name, phases.READY)
        return result

    def _time_in_rounds(self, candidates: list[Candidate]) -> bool:
        """Take every variant's samples, a slice of each per round (see measure.timer),
        with the minor page faults each slice took, in :func:`~attnprof.measure.timer.
        interleaved_rounds`. True when stopped by a variant that ran out of memory (with
        ``stop_after_oom``)."""
        sizes = [round_sizes(c.measured.warmup.samples, self.settings.plan.rounds)
                 for c in candidates]
        rounds = max((len(s) for s in sizes), default=0)

        def take(i: int, r: int, samples: int) -> bool:
            candidate = candidates[i]
            if candidate.failure is not None:
                return False
            self._run_phase(candidate, phases.timing_round(r + 1, rounds),
                            partial(self._slice, candidate, samples))
            return (self.stop_after_oom and candidate.failure is not None
                    and _ran_out(candidate.failure))

        return interleaved_rounds(sizes, take)

    def _slice(self, candidate: Candidate, samples: int) -> None:
        with candidate.running(self.workload):
            candidate.step()  # one untimed call: the others ran since this one did
            before, waited, t0 = minor_faults(), cpu_wait_s(), time.perf_counter()
            taken, dispatch = take_samples(candidate.step, samples,
                                           device=self.workload.device)
            wall, after, wait = time.perf_counter() - t0, minor_faults(), waited_s(
                waited, cpu_wait_s())
        faults = None if before is None or after is None else after - before
        candidate.measured.add_samples(taken, dispatch, faults, wait_s=wait, wall_s=wall)

    def _finish(self, candidate: Candidate) -> VariantResult:
        """Memory, accuracy and trace of a timed variant, each a phase of its own (one
        that fails keeps what the others measured), then its row, built once."""
        settings = self.settings
        if settings.measure_memory and candidate.failure is None:
            self._run_phase(candidate, phases.MEMORY, partial(self._memory, candidate))
        if isinstance(self.references, str):  # no reference to check against: say so
            candidate.measured.notes.append(self.references)
        elif settings.check_accuracy and candidate.failure is None:
            reference = self.references[candidate.variant.window(self.workload)]
            self._run_phase(candidate, phases.ACCURACY,
                            partial(self._accuracy, candidate, reference))
        if settings.trace_dir is not None and candidate.failure is None:
            self._run_phase(candidate, phases.TRACING, partial(self._trace, candidate))
        row = self._row(candidate)
        if row.trace is not None:
            self._phase(row.variant, phases.ANALYSING)
            _attach_analysis(row, self.workload)
        return row

    def _references(self, chosen: Sequence[Variant]) -> dict[int | None, torch.Tensor] | str:
        """The float64 reference output per mask the variants use, made before any variant
        runs: attnprof's memory, in place before a worker's cap (see
        :func:`attnprof.run.compare.run_point`). Within ``--variant-timeout`` and the
        memory there is: else why no accuracy is checked, which every measured row then
        says (never a variant's failure: the reference is attnprof's)."""
        settings, workload = self.settings, self.workload
        if not settings.check_accuracy:
            return {}
        self._phase(OWN_STEPS[1], "computing the float64 reference")
        windows = dict.fromkeys(v.window(workload) for v in chosen)
        try:
            with time_limit(settings.variant_timeout_s, "computing the float64 reference"):
                return {w: reference_output(self.inputs, workload, w) for w in windows}
        except TimeLimitExceeded:
            return (f"accuracy not checked: the float64 reference did not finish within "
                    f"{settings.variant_timeout_s:g} s (--variant-timeout)")
        except (MemoryError, RuntimeError) as exc:
            if not is_oom(exc):
                raise
            return "accuracy not checked: the float64 reference did not fit in memory"
        finally:
            release_free_memory()  # its temporaries: not what the variants should reuse

    def _start_profiler(self) -> None:
        """Profile a trivial step once, before the variants: the profiler's first start in
        a process (imports, Kineto's set-up, its buffers) takes a second or more on a busy
        machine — attnprof's time and memory, which no variant's memory phase (its time
        limit, a worker's memory cap) should be charged for."""
        import torch

        self._phase(OWN_STEPS[2], phases.STARTING_PROFILER)
        with contextlib.suppress(Exception):  # then the variants' phases say what fails
            profile_step(lambda: torch.ones(64).add_(1), "cpu")

    def _memory(self, candidate: Candidate) -> None:
        with candidate.running(self.workload):
            # The same profiled step records every op's shapes: the variant's traffic,
            # at no extra call (record_shapes cost no measurable time here, see
            # attnprof.knowledge.op_traffic).
            candidate.measured.memory = profile_step(candidate.step, self.workload.device,
                                                     shapes=True)

    def _accuracy(self, candidate: Candidate, reference: torch.Tensor) -> None:
        inputs, measured = self.inputs, candidate.measured
        checked, note = accuracy_call(candidate.variant, candidate.built, self.workload)
        if note is not None:
            measured.notes.append(note)
        call = checked_call(checked, self.workload)  # its shape, once more
        with candidate.built.context(), grad_mode("forward"):
            out = call(inputs.q, inputs.k, inputs.v)
        measured.error, measured.nonfinite = output_error(out, reference,
                                                          scored_rows(self.workload))

    def _trace(self, candidate: Candidate) -> None:
        try:
            candidate.measured.trace = _capture(candidate, self.workload, self.settings)
        except Exception as exc:  # the folder or the profiler: keep what was measured
            candidate.measured.notes.append(f"trace not written: {type(exc).__name__}: "
                                            f"{one_line(str(exc), 200)}")

    # ----- guards around every phase ----------------------------------------------------
    def _run_phase(self, candidate: Candidate, phase: str, body: Callable[[], None]) -> None:
        """One phase of a measured variant: a failure ends its measuring (keeping what
        the phases before measured); success hands its row so far to ``on_kept``."""
        self._phase(candidate.variant.name, phase)
        failure, keeps = self._guarded(candidate.variant, candidate.measured, phase, body)
        if failure is not None:
            candidate.fail(failure, keeps)
        elif self.on_kept is not None:
            self.on_kept(self._row(candidate))

    def _guarded(self, variant: Variant, measured: Measurements, phase: str,
                 body: Callable[[], None]) -> tuple[VariantResult | None, bool]:
        """Run ``body`` — the variant's own code in ``phase`` — under --variant-timeout,
        then put torch's settings and the shared inputs back. Returns the row the variant
        fails with (``None``: it did not) and whether what it measured before stays valid.

        Only a stop signal escapes, also one the variant caught or swallowed: an exception
        of any type from the variant (KeyboardInterrupt, SystemExit, GeneratorExit...) is
        its row.
        """
        limited = phases.limited_phase(phase) or phase
        failure = None
        try:
            with time_limit(self.settings.variant_timeout_s, limited):
                body()
        except BaseException as exc:  # isolation: whatever the variant raises is its row
            reraise_stop(exc)
            failure = failure_row(variant, exc, measured.warnings, self.workload)
        finally:  # weights drawn while building are no news; random numbers per call are
            measured.note_state_changes(self.state.restore(quiet_rng=phase == phases.BUILDING))
        raise_if_stopped()
        if changed := self.guard.check(limited):  # worse than any failure: hurts the others
            return status_row(variant, "error", changed, warnings=measured.warnings), False
        return failure, True

    def _row(self, candidate: Candidate) -> VariantResult:
        """The variant's row from what it measured, ended by its failure if it had one."""
        measured, failure = candidate.measured, candidate.failure
        if failure is None:
            return result_row(candidate.variant, self.workload, measured, self.ceilings)
        if candidate.keeps and measured.samples_ms:
            row = result_row(candidate.variant, self.workload, measured, self.ceilings)
            return kept_row(row, failure, planned_results(self.settings))
        return _with_state(failure, measured)

    def _interrupted_row(self, candidate: Candidate) -> VariantResult:
        """The row of a variant whose timing rounds were cut short by a stop."""
        if candidate.failure is not None:
            return self._row(candidate)
        measured = candidate.measured
        if not measured.samples_ms:
            return status_row(candidate.variant, "error", "interrupted before any sample",
                              warnings=measured.warnings)
        measured.notes.append(f"interrupted: {len(measured.samples_ms)} of "
                              f"{measured.warmup.samples} samples; memory, accuracy and "
                              "trace not taken")
        return result_row(candidate.variant, self.workload, measured, self.ceilings,
                          partial_note=False)

    def _phase(self, variant: str, name: str) -> None:
        if self.progress is not None:
            self.progress(variant, name)

    def _hand_over(self, record: CompareRecord, outcomes: list[VariantResult | Candidate],
                   on_record: OnRecord | None) -> CompareRecord:
        """The record after a variant ran out of memory: every row final so far (refusals,
        failures, the out-of-memory one, with what it had measured), not the variants
        still being measured."""
        for outcome in outcomes:
            if isinstance(outcome, VariantResult):
                record.results.append(outcome)
            elif outcome.failure is not None:
                record.results.append(self._row(outcome))
        if on_record is not None:
            on_record(record)
        return record


def _ran_out(outcome: VariantResult | Candidate) -> bool:
    """Whether ``outcome`` is a variant that ran out of memory on a real allocation."""
    return isinstance(outcome, VariantResult) and ran_out_of_memory(outcome)


def _with_state(failure: VariantResult, measured: Measurements) -> VariantResult:
    """A failed variant's row, noting the torch settings it changed before it failed."""
    notes = state_notes(measured.state_changes)
    return msgspec.structs.replace(failure, notes=[*failure.notes, *notes]) if notes \
        else failure


def _capture(candidate: Candidate, workload: Workload, settings: Settings) -> str:
    """Record the variant's trace; the path goes into the record."""
    assert settings.trace_dir is not None
    path = Path(settings.trace_dir) / trace_file_name(candidate.variant.name)
    with candidate.built.context(), grad_mode(workload.mode):
        capture_trace(candidate.step, candidate.variant.name, workload.device, path,
                      settings.trace, metadata={"workload": workload.to_dict()})
    return str(path)


def _attach_analysis(row: VariantResult, workload: Workload) -> None:
    """Explain the trace just written, with the row's warnings as evidence. A trace the
    loader refuses costs its analysis, never the row or the variants after it."""
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    assert row.trace is not None
    try:
        row.analysis = analyze_trace(load_trace(row.trace), result=row, workload=workload)
    except UsageError as exc:
        row.notes.append(f"trace not analysed: {one_line(str(exc), 200)}")


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
