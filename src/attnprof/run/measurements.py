"""What a comparison collects of one variant while it runs, before its row is built.

A :class:`Candidate` is a variant built and warmed up; its :class:`Measurements` gather the
samples round by round, then memory, accuracy and the trace. The row is built once from
them (:func:`attnprof.run.rows.result_row`), never patched field by field.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from attnprof.formatting import one_line
from attnprof.measure.inputs import grad_mode
from attnprof.measure.memory import MemoryProfile
from attnprof.measure.timer import Timing, Warmup
from attnprof.record.compare import VariantResult
from attnprof.variants import Built, Variant
from attnprof.workload.problem import Workload

__all__ = ["Candidate", "Measurements", "caught_messages"]


@dataclass
class Measurements:
    """Everything measured of one variant so far; ``None`` where not (yet) measured."""

    warmup: Warmup
    samples_ms: list[float] = field(default_factory=list)
    dispatch_ms: list[float] = field(default_factory=list)
    memory: MemoryProfile | None = None
    error: float | None = None
    #: Output values that were NaN or ±Inf when the accuracy was checked.
    nonfinite: int | None = None
    trace: str | None = None
    #: PyTorch's warnings, one line each, in the order first seen.
    warnings: list[str] = field(default_factory=list)
    #: Facts to show beside the numbers (the variant's own, then the run's).
    notes: list[str] = field(default_factory=list)
    #: Minor page faults during the samples and the calls they span (``None``: the
    #: platform does not count them).
    minor_faults: int | None = 0
    faulted_calls: int = 0
    #: torch's global settings the variant changed (and attnprof put back), one line each.
    state_changes: list[str] = field(default_factory=list)
    #: Seconds the process's threads waited for a CPU while the samples were taken, and
    #: the wall seconds those stretches lasted (``None``: the platform does not count it).
    cpu_wait_s: float | None = 0.0
    timed_wall_s: float = 0.0

    def add_samples(self, samples_ms: list[float], dispatch_ms: list[float],
                    minor_faults: int | None, *, wait_s: float | None = None,
                    wall_s: float = 0.0) -> None:
        """One round's samples, the minor page faults taken while they ran, and how long
        the threads waited for a CPU meanwhile (``wait_s`` over ``wall_s``)."""
        self.samples_ms.extend(samples_ms)
        self.dispatch_ms.extend(dispatch_ms)
        self.cpu_wait_s = None if wait_s is None or self.cpu_wait_s is None else (
            self.cpu_wait_s + wait_s)
        self.timed_wall_s += wall_s
        if minor_faults is None or self.minor_faults is None:
            self.minor_faults = None
        else:
            self.minor_faults += minor_faults
            self.faulted_calls += len(samples_ms)

    def faults_per_call(self) -> float | None:
        """Minor page faults per timed call: first-touch memory the variant paid for."""
        if self.minor_faults is None or not self.faulted_calls:
            return None
        return self.minor_faults / self.faulted_calls

    def wait_fraction(self) -> float | None:
        """The fraction of the timed stretches' wall time the threads waited for a CPU
        (summed over the threads; ``None`` where unknown or nothing was timed)."""
        if self.cpu_wait_s is None or self.timed_wall_s <= 0:
            return None
        return self.cpu_wait_s / self.timed_wall_s

    def note_state_changes(self, lines: list[str]) -> None:
        """Settings of torch's the variant changed in a phase (put back after it)."""
        self.state_changes = list(dict.fromkeys([*self.state_changes, *lines]))

    def timing(self, device_timed: bool) -> Timing:
        """The samples taken so far, with the warm-up's first call."""
        return Timing(self.samples_ms, self.dispatch_ms, self.warmup.first_call_s,
                      self.warmup.calls, device_timed=device_timed)


@dataclass
class Candidate:
    """A variant built and warmed up, collecting its measurements round by round."""

    variant: Variant
    built: Built
    step: Callable[[], object]
    measured: Measurements
    #: How a later phase failed (set once; no phase runs after it).
    failure: VariantResult | None = None
    #: Whether the row keeps what the phases before the failure measured (not when the
    #: variant changed its inputs: then its numbers are not the workload's).
    keeps: bool = True

    def fail(self, failure: VariantResult, keeps: bool) -> None:
        """End this variant's measuring with ``failure``."""
        self.failure, self.keeps = failure, keeps

    @contextlib.contextmanager
    def running(self, workload: Workload) -> Iterator[None]:
        """The variant's own context and grad mode, its warnings caught into ``measured``."""
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("default")  # once per call site, not once per sample
            try:
                with self.built.context(), grad_mode(workload.mode):
                    yield
            finally:
                self.measured.warnings = list(dict.fromkeys(
                    [*self.measured.warnings, *caught_messages(seen)]))


def caught_messages(seen: list[warnings.WarningMessage]) -> list[str]:
    """Caught warnings as distinct one-line messages, in the order first seen."""
    return list(dict.fromkeys(one_line(str(m.message)) for m in seen))
