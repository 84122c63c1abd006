"""Device time the way Holistic Trace Analysis splits it, so the two can be compared.

HTA's ``get_temporal_breakdown`` (``hta/analyzers/breakdown_analysis.py``) and
``get_comm_comp_overlap`` (``communication_analysis.py``), restated over attnprof's device
events:

* the events counted are those launched before the last ``ProfilerStep`` began, when the
  trace has two steps or more (HTA's trace filter drops the last step, which the export
  can cut short); with fewer, every device event;
* *span*: from the first counted event's start to the last one's end;
* *idle*: the part of the span in which no event ran (span minus the union of all
  intervals);
* *compute*: the union of the compute kernels' intervals (HTA's COMPUTATION: not
  communication, not a copy or set);
* *non-compute*: span minus compute minus idle (communication, copies and sets running
  while no compute kernel does);
* *overlap*: the time in which a communication kernel and a compute kernel both ran, as a
  share of the union of the communication kernels' intervals.

Unions and intersections are computed exactly on the events' float µs and summed with
:func:`math.fsum`. A CPU-only trace has no device timeline: no breakdown.
"""

from __future__ import annotations

import math

import numpy as np

from attnprof.analysis.index.device_events import DEVICE_KINDS, DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.regions import Region
from attnprof.record.ranks import TemporalBreakdown

__all__ = ["temporal_breakdown"]

_COMPUTE = DEVICE_KINDS.index("compute")
_COMMUNICATION = DEVICE_KINDS.index("communication")


def temporal_breakdown(ops: OpIndex, devices: DeviceEvents, steps: Region | None
                       ) -> TemporalBreakdown | None:
    """The breakdown of ``devices`` (see the module doc); None without device events."""
    if len(devices) == 0:
        return None
    keep = np.ones(len(devices), dtype=bool)
    window = "every device event (fewer than two profiler steps)"
    if steps is not None and len(steps.instances) >= 2:
        last = steps.instances[-1]
        launched = devices.launch >= 0
        launch_ts = np.where(launched, ops.trace.events.ts[np.maximum(devices.launch, 0)],
                             np.inf)
        keep = launched & (launch_ts < last.start)
        window = f"device events launched before the last step ({ops.name_of(last.op)}) " \
                 "began, as HTA"
    start, end, kind = devices.start[keep], devices.end[keep], devices.kind[keep]
    if len(start) == 0:
        return None
    every = _merged(start, end)
    span = float(np.max(end) - np.min(start))
    busy = _length(every)
    compute = _merged(start[kind == _COMPUTE], end[kind == _COMPUTE])
    comm = _merged(start[kind == _COMMUNICATION], end[kind == _COMMUNICATION])
    compute_us, comm_us = _length(compute), _length(comm)
    idle = span - busy
    return TemporalBreakdown(
        events=int(keep.sum()), window=window, span_us=span, compute_us=compute_us,
        non_compute_us=span - compute_us - idle, idle_us=idle,
        overlap=_overlap(comm, compute) / comm_us if comm_us > 0 else None)


_Intervals = tuple[np.ndarray, np.ndarray]


def _merged(start: np.ndarray, end: np.ndarray) -> _Intervals:
    """The union of intervals ``[start, end)`` as disjoint intervals in time order; ones
    that touch are joined (as HTA's ``merge_kernel_intervals``)."""
    if len(start) == 0:
        return start, end
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    first = np.flatnonzero(np.r_[True, s[1:] > reach[:-1]])
    return s[first], np.maximum.reduceat(e, first)


def _length(intervals: _Intervals) -> float:
    return math.fsum((intervals[1] - intervals[0]).tolist())


def _overlap(a: _Intervals, b: _Intervals) -> float:
    """Total length of the intersection of two unions of disjoint intervals."""
    if len(a[0]) == 0 or len(b[0]) == 0:
        return 0.0
    # Sweep the boundaries: a contributes 1 while open, b 2; both are open where the sum is 3.
    times = np.concatenate([a[0], a[1], b[0], b[1]])
    steps = np.concatenate([np.full(len(a[0]), 1), np.full(len(a[1]), -1),
                            np.full(len(b[0]), 2), np.full(len(b[1]), -2)])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(steps[order])
    both = np.flatnonzero(level[:-1] == 3)
    return math.fsum((times[both + 1] - times[both]).tolist())
