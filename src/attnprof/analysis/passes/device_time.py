"""Device time per forward: busy time, time by category, idle gaps, and the verdict.

Region passes (see :mod:`attnprof.analysis.passes`).

*Busy* time is the union of the intervals of a step's device events (overlapping kernels on
two streams count once); *category* times are plain sums of durations. A step's device
window runs from the start of its CPU region (nothing it launches can start earlier) to the
end of its last device event; *idle* is the part of that window in which none of its device
events ran, and each stretch of it is a :class:`~attnprof.record.trace_report.Gap` named after
the event that preceded it (``None``: the step's start, i.e. waiting for the first launch).

The verdict compares CPU dispatch time with device busy time per forward: a forward whose
CPU side takes longer than the device work it launches is ``cpu-bound``, the GPU waits on
Python and the dispatcher; otherwise ``device-bound``. A CPU trace, or a region that
launched no device work, is ``cpu-only``; a GPU trace recorded without device activity is
``unknown``.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from attnprof.analysis.index.device_events import DEVICE_KINDS
from attnprof.analysis.index.pairs import distinct
from attnprof.analysis.index.views import RegionView
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.trace_report import Gap

__all__ = ["DEVICE_CATEGORIES_ORDER", "GAPS_KEPT", "judge_boundness", "measure_device_time"]

DEVICE_CATEGORIES_ORDER = ("compute", "memcpy", "memset", "communication")
#: How many of the largest idle gaps a region report keeps.
GAPS_KEPT = 5


def measure_device_time(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``device_us_per_forward``, ``categories_us``, ``idle_us`` and ``gaps``."""
    if not view.on_device:
        return _cpu_only(view, fields)
    dev = view.devices
    n = view.n or 1
    at = view.device_visits
    dur = dev.end[at] - dev.start[at]
    kind = dev.kind[at]
    categories = {c: math.fsum(dur[kind == DEVICE_KINDS.index(c)].tolist()) / n
                  for c in DEVICE_CATEGORIES_ORDER}
    line = _timelines(view)
    bounds = np.searchsorted(line.instance, np.arange(view.n + 1))
    gap_bounds = np.searchsorted(line.instance[line.gap], np.arange(view.n + 1))
    pieces, gap_durs = line.busy.tolist(), line.gap_dur.tolist()
    busy, idle = [], []
    for k in distinct(line.instance).tolist():
        # In time order, as the device ran them: the same sums, bit for bit, as adding up
        # one event after another.
        busy.append(functools.reduce(operator.add, pieces[bounds[k]:bounds[k + 1]], 0.0))
        idle.append(math.fsum(gap_durs[gap_bounds[k]:gap_bounds[k + 1]]))
    idle_us = math.fsum(idle) / n
    categories["idle"] = idle_us
    largest = np.lexsort((line.gap_start, -line.gap_dur))[:GAPS_KEPT]
    strings = view.ops.trace.events.strings
    kept = [
        Gap(start_us=start, dur_us=dur,
            after=decode_kernel_name(strings[int(dev.name[j])]).short if j >= 0 else None)
        for dur, start, j in zip(line.gap_dur[largest].tolist(),
                                 line.gap_start[largest].tolist(),
                                 line.gap_after[largest].tolist(), strict=True)
    ]
    return {"device_us_per_forward": math.fsum(busy) / n, "categories_us": categories,
            "idle_us": idle_us, "gaps": kept}


class _Timelines(msgspec.Struct, frozen=True):
    """Every instance's device timeline: per event (by instance, then start) the busy time
    it adds; per gap before an event, its length, start and the event before it."""

    instance: np.ndarray
    busy: np.ndarray
    gap: np.ndarray  # the events that follow a gap
    gap_dur: np.ndarray
    gap_start: np.ndarray
    gap_after: np.ndarray  # device position of the event that set the cursor (-1: none)


def _timelines(view: RegionView) -> _Timelines:
    """Sweep every instance's events in start order with a cursor at the latest end so far
    (from the window's start, or the first event if earlier): an event starting past the
    cursor leaves a gap, the part of it past the cursor is busy time. All instances at once:
    the cursor before each event is a running maximum within its instance."""
    dev = view.devices
    at, owner = view.device_visits, view.device_instance
    order = np.lexsort((dev.start[at], owner))
    pos, k = at[order], owner[order]
    s, e = dev.start[pos], dev.end[pos]
    m = len(pos)
    first = np.r_[True, k[1:] != k[:-1]] if m else np.zeros(0, dtype=bool)
    seg = np.cumsum(first) - 1
    window = np.array([i.start for i in view.instances], dtype=np.float64)
    c0 = np.minimum(window[k], s[first][seg]) if m else s
    # Rank the ends so that a running maximum of ranks finds the latest end so far and,
    # among equal ends, the earliest event (a later equal end does not move the cursor);
    # offsetting each instance's ranks past the previous one's keeps the maxima apart.
    by_end = np.lexsort((-np.arange(m), e))
    rank = np.empty(m, dtype=np.int64)
    rank[by_end] = np.arange(m)
    running = np.maximum.accumulate(rank + seg * m) if m else rank
    before = np.r_[-1, running[:-1]] if m else rank
    before[first] = -1
    prev = np.where(before >= 0, by_end[np.maximum(before - seg * m, 0)], -1)
    raised = (prev >= 0) & (e[np.maximum(prev, 0)] > c0)
    cursor = np.where(raised, e[np.maximum(prev, 0)], c0)
    prev = np.where(raised, prev, -1)
    busy = np.where(e > cursor, e - np.maximum(s, cursor), 0.0)
    gap = np.flatnonzero(s > cursor)
    return _Timelines(instance=k, busy=busy, gap=gap, gap_dur=s[gap] - cursor[gap],
                      gap_start=cursor[gap],
                      gap_after=np.where(prev[gap] >= 0, pos[np.maximum(prev[gap], 0)], -1))


def _cpu_only(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    # No device timeline: split the CPU time into compute ops' work and everything else
    # (Python, dispatcher, allocation), the CPU analogue of busy vs idle.
    n = view.n or 1
    compute = math.fsum(us for work in view.compute_us_of for us in work.tolist()) / n
    cpu = float(fields.get("cpu_us_per_forward", 0.0))
    return {"device_us_per_forward": None, "idle_us": None, "gaps": [],
            "categories_us": {"compute": compute, "framework": max(cpu - compute, 0.0)}}


def judge_boundness(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Field ``verdict``: ``cpu-bound``, ``device-bound`` or ``cpu-only`` (see the module doc)."""
    device = fields.get("device_us_per_forward")
    if not view.on_device:
        # A GPU trace without device events (activity tracing off) cannot be judged.
        return {"verdict": "cpu-only" if view.trace_device == "cpu" else "unknown"}
    if not device:
        return {"verdict": "cpu-only"}  # this region launched nothing
    cpu = float(fields.get("cpu_us_per_forward", 0.0))
    return {"verdict": "cpu-bound" if cpu > device else "device-bound"}
