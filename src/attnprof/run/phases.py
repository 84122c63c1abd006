"""The phases of a variant in a comparison, by the names its progress reports use, and
which of them are the variant's own time-limited work.

``--variant-timeout`` bounds each phase that runs the variant's code: building and warming
up, each of its timing slices, its memory profile, its accuracy check, its trace. Between
them attnprof does work of its own (the analysis of a trace, say) that no variant should
be charged for. The runner (:mod:`attnprof.run.compare`) enforces the
limit inside its process; the process executor enforces the same limits from outside, by
the progress reports, and kills a worker whose variant does not stop (a hang inside native
code, a variant that blocks the alarm).
"""

from __future__ import annotations

__all__ = ["ACCURACY", "ANALYSING", "BUILDING", "COMPILING", "DONE", "MEMORY", "READY",
           "STARTING_PROFILER", "TRACING", "WARMING_UP", "limited_phase",
           "timing_round"]

BUILDING = "building"
COMPILING = "compiling"
WARMING_UP = "warming up"
READY = "ready"
STARTING_PROFILER = "starting the profiler"
MEMORY = "memory"
ACCURACY = "accuracy"
TRACING = "tracing"
ANALYSING = "analysing the trace"
DONE = "done"

_TIMING = "timing, round "
#: The time-limited phase each reported phase belongs to, as messages name it.
_LIMITED = {BUILDING: "building and warming up", COMPILING: "building and warming up",
            WARMING_UP: "building and warming up", MEMORY: "measuring memory",
            ACCURACY: "checking accuracy", TRACING: "tracing"}


def timing_round(r: int, rounds: int) -> str:
    """The phase of timing round ``r`` (from 1) of ``rounds``."""
    return f"{_TIMING}{r} of {rounds}"


def limited_phase(phase: str) -> str | None:
    """The time-limited phase a reported ``phase`` belongs to (its name in messages), or
    ``None`` for attnprof's own work."""
    if phase.startswith(_TIMING):
        return phase
    return _LIMITED.get(phase)
