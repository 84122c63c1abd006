"""How carefully to measure: the timing plan, the trace capture and the run's options.

Plain frozen data (``msgspec.Struct``), so a run's settings travel to a worker process and
into the record typed, and come back validated. :meth:`Settings.validate` turns every
impossible value (a non-finite or negative time, zero rounds) into a :class:`UsageError`
that names the flag and the fix, before anything runs.
"""

from __future__ import annotations

import math
import os
from typing import Any

import msgspec

from attnprof.errors import UsageError

__all__ = ["CaptureSpec", "Settings", "TimingPlan", "check_seconds"]


class TimingPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How long to measure: warm-up and sampling budgets in seconds, sample bounds."""

    warmup_s: float = 0.1
    min_time_s: float = 0.4
    min_samples: int = 10
    max_samples: int = 2000
    min_warmup_calls: int = 2
    #: Rounds a comparison spreads each variant's samples over (see measure.timer).
    rounds: int = 5

    def sample_count(self, per_call_s: float) -> int:
        """Samples to take so that sampling lasts about ``min_time_s``, within the bounds."""
        if per_call_s <= 0:
            return self.max_samples
        wanted = int(self.min_time_s / per_call_s) + 1
        return max(self.min_samples, min(self.max_samples, wanted))


class CaptureSpec(msgspec.Struct, frozen=True, kw_only=True):
    """How many profiler steps to skip, warm up and record."""

    steps: int = 3
    wait: int = 1
    warmup: int = 1


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """How carefully to measure (timing budget, seed, optional passes)."""

    plan: TimingPlan = msgspec.field(default_factory=TimingPlan)
    seed: int = 0
    measure_memory: bool = True
    check_accuracy: bool = True
    #: Measure this machine's matmul and copy ceilings first (about a second), so rates
    #: can be read as shares of them.
    measure_ceilings: bool = True
    #: Write a torch.profiler trace of each variant into this folder (``None``: no trace);
    #: each trace is analysed as soon as it is written.
    trace_dir: str | None = None
    trace: CaptureSpec = msgspec.field(default_factory=CaptureSpec)

    def __post_init__(self) -> None:
        # A folder may be given as a Path; the record keeps the text.
        if self.trace_dir is not None and not isinstance(self.trace_dir, str):
            msgspec.structs.force_setattr(self, "trace_dir", os.fspath(self.trace_dir))

    def replace(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return msgspec.structs.replace(self, **changes)

    def validate(self) -> Settings:
        """Raise :class:`UsageError` naming the flag of the first impossible value."""
        plan = self.plan
        # Zero is a valid budget here (the sample bounds then decide); the CLI asks for more.
        check_seconds("--min-time", plan.min_time_s, allow_zero=True)
        check_seconds("warm-up time", plan.warmup_s, allow_zero=True)
        for flag, value in (("--rounds", plan.rounds), ("--trace-steps", self.trace.steps),
                            ("minimum samples", plan.min_samples),
                            ("maximum samples", plan.max_samples)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"{flag} must be a positive integer, got {value!r}")
        if plan.min_samples > plan.max_samples:
            raise UsageError(f"minimum samples {plan.min_samples} exceed maximum samples "
                             f"{plan.max_samples}; raise the maximum")
        if not 0 <= self.seed < 2**63:
            raise UsageError(f"--seed must be between 0 and 2**63-1, got {self.seed}")
        return self


def check_seconds(flag: str, value: float, *, allow_zero: bool = False) -> None:
    """Raise :class:`UsageError` unless ``value`` is a finite, positive number of seconds
    (or zero, with ``allow_zero``)."""
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (
        value >= 0 if allow_zero else value > 0)
    if not ok:
        raise UsageError(f"{flag} must be positive (a finite number of seconds), got {value!r}")
