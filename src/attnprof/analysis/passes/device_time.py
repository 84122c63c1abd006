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

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

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
    busy, idle = [], []
    sums: dict[str, list[float]] = {c: [] for c in DEVICE_CATEGORIES_ORDER}
    gaps: list[tuple[float, float, int]] = []  # (dur, start, preceding device position)
    for k, positions in enumerate(view.device_of):
        if len(positions) == 0:
            continue
        for d in positions.tolist():
            sums[dev.category[d]].append(float(dev.end[d] - dev.start[d]))
        b, i, g = _timeline(dev.start[positions], dev.end[positions], view.instances[k].start)
        busy.append(b)
        idle.append(i)
        gaps.extend((dur, start, int(positions[j]) if j >= 0 else -1) for dur, start, j in g)
    n = view.n or 1
    categories = {c: math.fsum(v) / n for c, v in sums.items()}
    idle_us = math.fsum(idle) / n
    categories["idle"] = idle_us
    gaps.sort(key=lambda g: (-g[0], g[1]))
    strings = view.ops.trace.events.strings
    kept = [
        Gap(start_us=start, dur_us=dur,
            after=decode_kernel_name(strings[int(dev.name[j])]).short if j >= 0 else None)
        for dur, start, j in gaps[:GAPS_KEPT]
    ]
    return {"device_us_per_forward": math.fsum(busy) / n, "categories_us": categories,
            "idle_us": idle_us, "gaps": kept}


def _cpu_only(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    # No device timeline: split the CPU time into compute ops' work and everything else
    # (Python, dispatcher, allocation), the CPU analogue of busy vs idle.
    n = view.n or 1
    compute = math.fsum(us for work in view.compute_us_of for us in work.tolist()) / n
    cpu = float(fields.get("cpu_us_per_forward", 0.0))
    return {"device_us_per_forward": None, "idle_us": None, "gaps": [],
            "categories_us": {"compute": compute, "framework": max(cpu - compute, 0.0)}}


def _timeline(start: np.ndarray, end: np.ndarray, window_start: float
              ) -> tuple[float, float, list[tuple[float, float, int]]]:
    """(busy µs, idle µs, gaps as (dur, start, index of the preceding event or -1))."""
    order = np.argsort(start, kind="stable")
    busy = 0.0
    gaps: list[tuple[float, float, int]] = []
    cursor, prev = min(window_start, float(start[order[0]])), -1
    for j in order.tolist():
        s, e = float(start[j]), float(end[j])
        if s > cursor:
            gaps.append((s - cursor, cursor, prev))
        if e > cursor:
            busy += e - max(s, cursor)
            cursor, prev = e, j
    idle = math.fsum(g[0] for g in gaps)
    return busy, idle, gaps


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
