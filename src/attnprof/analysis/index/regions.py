"""Regions: the repeated stretches of a trace that statistics are taken "per" of.

A region is a name; each time the code passed through it is an *instance*. attnprof's own
captures wrap every step in ``record_function("attnprof::<variant>")``, so each instance of
an ``attnprof::*`` annotation is one forward. Foreign traces made with a profiler schedule
have ``ProfilerStep#N`` annotations instead, one per step; those become instances of the
region ``ProfilerStep``. A trace with neither is one region, ``whole trace``, with a single
instance spanning every CPU op. Only CPU ``user_annotation`` events count: the
``gpu_user_annotation`` copies on the device timeline would count every step twice.

An instance is a time window opened by one thread; what other threads do inside that window
belongs to it too (the autograd engine runs backward on its own thread on CUDA). A window
never extends past the trace's last recorded event: a step marker left open when profiling
stopped (seen in real traces: a 13 s ``ProfilerStep#1`` in a 0.36 s capture) is cut there,
so it does not count seconds of CPU time that nothing in the trace accounts for.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.errors import UsageError
from attnprof.knowledge.annotations import REGION_PREFIX

__all__ = ["PROFILER_STEP", "REGION_PREFIX", "WHOLE_TRACE", "Instance", "Region", "find_regions",
           "profiler_steps", "step_number"]

PROFILER_STEP = "ProfilerStep"
WHOLE_TRACE = "whole trace"
_STEP = re.compile(r"^ProfilerStep#\d+$")


class Instance(msgspec.Struct, frozen=True):
    """One pass through a region: the annotation op (``op`` -1 for the whole trace)."""

    op: int  # position in the OpIndex, -1 for the whole-trace instance
    pid: int | None
    tid: int | None
    start: float
    end: float

    @property
    def dur(self) -> float:
        """CPU duration, µs."""
        return self.end - self.start


class Region(msgspec.Struct, frozen=True):
    """A region name and its instances, in time order."""

    name: str
    instances: tuple[Instance, ...]


def find_regions(ops: OpIndex, pattern: str | None = None) -> list[Region]:
    """The regions: ``attnprof::*`` annotations, else profiler steps, else the whole trace.

    With ``pattern`` (a regular expression), the user annotations whose names match it are
    the regions instead, one per distinct name — for traces whose steps are marked by the
    user's own ``record_function`` labels.
    """
    strings = ops.trace.events.strings
    # Regions are annotations: only their names are looked at.
    annotations = np.flatnonzero(ops.annotation).tolist()
    names = dict(zip(annotations, [strings[i] for i in ops.name[annotations].tolist()],
                     strict=True))
    if pattern is not None:
        rx = re.compile(pattern)
        chosen = [i for i, n in names.items() if rx.search(n)]
        if not chosen:
            seen = list(dict.fromkeys(names.values()))
            listing = ", ".join(repr(n) for n in seen[:8]) or "none"
            raise UsageError(f"--region {pattern!r} matches no annotation in "
                             f"{ops.trace.meta.source}; its annotations: {listing}")
        return _grouped(ops, names, chosen)
    ours = [i for i, n in names.items() if n.startswith(REGION_PREFIX)]
    if ours:
        return _grouped(ops, names, ours)
    steps = _profiler_steps(ops, names)
    if steps is not None:
        return [steps]
    if len(ops) == 0:
        return []
    whole = Instance(op=-1, pid=None, tid=None, start=float(np.min(ops.start)),
                     end=float(np.max(ops.end)))
    return [Region(WHOLE_TRACE, (whole,))]


def profiler_steps(ops: OpIndex) -> Region | None:
    """The ``ProfilerStep#N`` annotations as one region (None when the trace has none),
    whatever other regions the trace has: a distributed run's ranks are compared step by
    step."""
    strings = ops.trace.events.strings
    annotations = np.flatnonzero(ops.annotation).tolist()
    return _profiler_steps(ops, dict(zip(
        annotations, [strings[i] for i in ops.name[annotations].tolist()], strict=True)))


def step_number(name: str) -> int | None:
    """N of ``ProfilerStep#N`` (None for any other name)."""
    return int(name.rpartition("#")[2]) if _STEP.match(name) else None


def _profiler_steps(ops: OpIndex, names: dict[int, str]) -> Region | None:
    steps = [i for i, n in names.items() if _STEP.match(n)]
    if not steps:
        return None
    return Region(PROFILER_STEP, _instances(ops, steps, _last_recorded_end(ops)))


def _grouped(ops: OpIndex, names: dict[int, str], positions: list[int]) -> list[Region]:
    groups: dict[str, list[int]] = {}
    for i in positions:
        groups.setdefault(names[i], []).append(i)
    horizon = _last_recorded_end(ops)
    return [Region(name, _instances(ops, pos, horizon)) for name, pos in groups.items()]


def _instances(ops: OpIndex, positions: list[int], horizon: float) -> tuple[Instance, ...]:
    found = [
        Instance(op=i, pid=int(ops.pid[i]), tid=int(ops.tid[i]), start=float(ops.start[i]),
                 end=max(float(ops.start[i]), min(float(ops.end[i]), horizon)))
        for i in positions
    ]
    return tuple(sorted(found, key=lambda x: x.start))


def _last_recorded_end(ops: OpIndex) -> float:
    """When the trace's last event other than an annotation ended (inf if none)."""
    t = ops.trace.events
    real = (t.mask_ph("X") & ~t.mask_cat("user_annotation", "gpu_user_annotation", "Trace")
            & t.mask_timed())
    if not real.any():
        return float("inf")
    return float(np.max(t.ts[real] + t.dur[real]))
