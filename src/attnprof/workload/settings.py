"""How carefully to measure: the timing plan, the trace capture and the run's options.

Plain frozen data (``msgspec.Struct``), so a run's settings travel to a worker process and
into the record typed, and come back validated. :meth:`Settings.validate` turns every
impossible value (a non-finite or negative time, zero rounds, an integer past 64 bits, an
unknown allocator state) into a :class:`UsageError` that names the flag and the fix, before
anything runs. What the numbers depend on beyond the timing plan is recorded here too: the
CPU allocator's state (``cpu_allocator``) and the per-phase time limit of a variant.
"""

from __future__ import annotations

import math
import os
from typing import Any, Literal

import msgspec

from attnprof.errors import UsageError

__all__ = ["CPU_ALLOCATOR_STATES", "DEFAULT_CPU_THREADS", "DEFAULT_VARIANT_TIMEOUT_S",
           "MAX_THREADS", "CaptureSpec", "CpuAllocator", "Settings", "TimingPlan",
           "check_seconds", "default_min_time", "default_threads", "parse_threads"]

#: The state of the host's allocator (glibc malloc) while CPU variants are measured; see
#: :mod:`attnprof.measure.allocator`. ``reuse``: freed memory is kept and reused, as CUDA's
#: caching allocator does; ``fresh``: every large allocation gets new pages from the
#: kernel (first touch: a page fault and zeroing per page, every call); ``system``: leave
#: malloc as the process found it (its MALLOC_* settings, or another allocator).
CpuAllocator = Literal["reuse", "fresh", "system"]
CPU_ALLOCATOR_STATES: tuple[str, ...] = CpuAllocator.__args__  # type: ignore[attr-defined]
#: Seconds one variant may spend in one phase (build and warm-up, one timing round, memory,
#: accuracy, trace) before it becomes a ``timeout`` row; generous, as the process
#: executor's idle limit: one compile or one timing round must fit in it.
DEFAULT_VARIANT_TIMEOUT_S = 900.0
#: Integers travel to torch and to the record as 64-bit values.
_INT_LIMIT = 2**63
#: The most processes one comparison is measured in.
MAX_PROCESSES = 100
#: Intra-op threads CPU variants are timed on unless ``--threads`` says otherwise. One, as
#: ``torch.utils.benchmark.Timer`` does (its ``num_threads=1``): a parallel op waits for its
#: slowest thread, so with a thread on every core its time depends on whatever else the
#: cores do, and on a VM on where the host places the vCPUs. Measured on the 2-vCPU
#: development VM, six fresh processes a set: the ratios to naive spread within 15% in no
#: set on both threads (up to 47%), in 7 of 12 on one (benchmarks/README.md, "Threads").
DEFAULT_CPU_THREADS = 1
#: More intra-op threads than this is a typo, not a machine.
MAX_THREADS = 4096


class TimingPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How long to measure: warm-up and sampling budgets in seconds, sample bounds."""

    warmup_s: float = 0.1
    min_time_s: float = 0.4
    min_samples: int = 10
    max_samples: int = 2000
    min_warmup_calls: int = 2
    #: Rounds a comparison spreads each variant's samples over (see measure.timer).
    rounds: int = 5
    #: Fresh processes the whole comparison is measured in, one after another (pyperf's
    #: ``--processes``): a process's speed is not the machine's (memory placement, where
    #: its threads land, the host's neighbours), so only several processes show how far
    #: a median moves between runs, the noise a diff of two runs must judge against.
    processes: int = 1

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
    #: The allocator state CPU variants are measured in (see :data:`CpuAllocator`).
    cpu_allocator: CpuAllocator = "reuse"
    #: Seconds a variant may spend in one phase before it becomes a ``timeout`` row
    #: (``None``: no limit). Inline, it stops Python-level hangs in the main thread only
    #: (see :mod:`attnprof.measure.deadline`); the process executor also kills a worker
    #: whose variant does not stop (see :mod:`attnprof.run.phases`).
    variant_timeout_s: float | None = DEFAULT_VARIANT_TIMEOUT_S
    #: Intra-op threads the variants run on (``torch.set_num_threads``) while measured;
    #: ``None``: as many as torch found (``--threads all``; every record before the setting).
    #: The environment's ``threads`` is what the run really had.
    threads: int | None = None

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
        if self.variant_timeout_s is not None:
            check_seconds("--variant-timeout", self.variant_timeout_s)
        for flag, value in (("--rounds", plan.rounds), ("--processes", plan.processes),
                            ("--trace-steps", self.trace.steps),
                            ("minimum samples", plan.min_samples),
                            ("maximum samples", plan.max_samples),
                            ("minimum warm-up calls", plan.min_warmup_calls)):
            _check_count(flag, value, least=1)
        _check_count("profiler wait steps", self.trace.wait, least=0)
        _check_count("profiler warm-up steps", self.trace.warmup, least=0)
        if self.cpu_allocator not in CPU_ALLOCATOR_STATES:
            raise UsageError(f"--cpu-allocator {self.cpu_allocator!r} is not one of "
                             f"{', '.join(CPU_ALLOCATOR_STATES)}")
        if self.threads is not None:
            if not isinstance(self.threads, int) or isinstance(self.threads, bool) \
                    or self.threads < 1:
                raise UsageError(f"--threads must be a positive number of threads or 'all', "
                                 f"got {self.threads!r}")
            if self.threads > MAX_THREADS:
                raise UsageError(f"--threads {self.threads} is more than any machine has; give "
                                 "the cores to use, or all")
        if plan.processes > MAX_PROCESSES:
            raise UsageError(f"--processes {plan.processes} is more than attnprof runs "
                             f"({MAX_PROCESSES}); 5 to 10 show the spread between runs")
        if plan.min_samples > plan.max_samples:
            raise UsageError(f"minimum samples {plan.min_samples} exceed maximum samples "
                             f"{plan.max_samples}; raise the maximum")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not (
                0 <= self.seed < _INT_LIMIT):
            raise UsageError(f"--seed must be between 0 and 2**63-1, got {self.seed}")
        return self


def _check_count(flag: str, value: object, *, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        kind = "a positive integer" if least == 1 else f"an integer of at least {least}"
        raise UsageError(f"{flag} must be {kind}, got {value!r}")
    if value >= _INT_LIMIT:
        raise UsageError(f"{flag} must be below 2**63, got {value}")


def default_min_time(device: str) -> float:
    """Seconds of samples per variant when ``--min-time`` is not given: a GPU's short,
    steady calls want more samples per round than a CPU's long ones can afford."""
    return 1.0 if device.startswith("cuda") else 0.4


def default_threads(device: str) -> int | None:
    """Intra-op threads when ``--threads`` is not given: :data:`DEFAULT_CPU_THREADS` on a
    CPU; on a GPU the host threads only launch kernels, so as torch found them."""
    return None if device.startswith("cuda") else DEFAULT_CPU_THREADS


def parse_threads(text: str) -> int | None:
    """``--threads``: a count of intra-op threads, or ``all`` (``None``: as torch found
    them, one per core); anything else is a :class:`UsageError` naming it."""
    word = text.strip().lower()
    if word == "all":
        return None
    try:
        count = int(word, 10)
    except ValueError:
        raise UsageError(f"--threads must be a positive number of threads or 'all', got "
                         f"{text!r}") from None
    Settings(threads=count).validate()
    return count


def check_seconds(flag: str, value: float, *, allow_zero: bool = False) -> None:
    """Raise :class:`UsageError` unless ``value`` is a finite, positive number of seconds
    (or zero, with ``allow_zero``)."""
    ok = isinstance(value, (int, float)) and math.isfinite(value) and (
        value >= 0 if allow_zero else value > 0)
    if not ok:
        raise UsageError(f"{flag} must be positive (a finite number of seconds), got {value!r}")
