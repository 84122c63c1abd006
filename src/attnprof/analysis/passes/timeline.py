"""One profiled step as it ran, for the report's timeline: the ops of one region instance
and the device events it launched, each on its lane (CPU thread or device stream).

A pure function of the region views. It picks the first region with work and, of its
instances, the one of median length (the first steps of a capture pay warm-up costs the
others do not); ops down to :data:`MAX_DEPTH` levels of each thread's tree are kept, so
the picture shows the step's structure rather than every leaf. At most :data:`LIMIT`
events are kept, the longest, and the record says how many there were.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnprof.analysis.index.device_events import DEVICE_KINDS
from attnprof.analysis.index.pairs import distinct
from attnprof.analysis.index.views import RegionView
from attnprof.record.trace_report import Timeline, TimelineEvent

__all__ = ["LIMIT", "MAX_DEPTH", "step_timeline"]

#: Events kept per timeline: enough to see a step, small enough for a report of many.
LIMIT = 400
#: Op levels drawn below each thread's top level (0: top level only).
MAX_DEPTH = 2


def step_timeline(views: list[RegionView] | tuple[RegionView, ...]) -> Timeline | None:
    """The timeline of the median-length instance of the first region that did any work
    (``None``: no region has an op or a device event)."""
    for view in views:
        if view.n == 0:
            continue
        order = np.argsort([inst.dur for inst in view.instances], kind="stable")
        k = int(order[len(order) // 2])
        ops, devices = _op_rows(view, k), _device_rows(view, k)
        total = len(ops) + len(devices)
        if not total:
            continue
        # The longest LIMIT, chosen before any event is built: a step holds thousands of
        # ops (11k in v100_training_large, 13 ms to build them all for 400 kept). A stable
        # sort on the negated durations keeps what sorted(key=-dur) kept, in its order.
        durations = np.concatenate([ops.dur, devices.dur])
        kept = (np.argsort(-durations, kind="stable")[:LIMIT].tolist() if total > LIMIT
                else range(total))
        n_ops = len(ops)
        events = [ops.event(i) if i < n_ops else devices.event(i - n_ops) for i in kept]
        events.sort(key=lambda e: (e.lane, e.start_us, e.depth))
        inst = view.instances[k]
        # An annotated step starts with its annotation; the whole trace, with its first event.
        origin = inst.start if inst.op >= 0 else min(e.start_us for e in events)
        shifted = [TimelineEvent(lane=e.lane, name=e.name, kind=e.kind,
                                 start_us=round(e.start_us - origin, 3),
                                 dur_us=round(e.dur_us, 3), depth=e.depth) for e in events]
        end = max(e.start_us + e.dur_us for e in shifted)
        return Timeline(region=view.name, instance=k, instances=view.n,
                        dur_us=round(max(end, inst.dur if inst.op >= 0 else 0.0), 3),
                        events=shifted, total=total, max_depth=MAX_DEPTH)
    return None


class _Rows:
    """A step's ops or device events as columns: durations (floats, for choosing the
    longest) and, as Python lists, what each bar shows; :meth:`event` builds one bar."""

    def __init__(self, view: RegionView, dur: np.ndarray, lane: str, lanes: list[Any],
                 names: list[int], kinds: list[str], start: list[Any], end: list[Any],
                 depth: list[int]) -> None:
        self.strings = view.ops.trace.events.strings
        self.dur, self.lane, self.lanes, self.names, self.kinds = dur, lane, lanes, names, kinds
        self.start, self.end, self.depth = start, end, depth

    def __len__(self) -> int:
        return len(self.dur)

    def event(self, i: int) -> TimelineEvent:
        start, end = self.start[i], self.end[i]
        return TimelineEvent(lane=f"{self.lane} {self.lanes[i]}", name=self.strings[self.names[i]],
                             kind=self.kinds[i], start_us=float(start),
                             dur_us=float(end - start), depth=self.depth[i])


def _op_rows(view: RegionView, k: int) -> _Rows:
    ops = view.ops
    positions = distinct(view.instance_ops(k))
    positions = positions[ops.depth[positions] <= MAX_DEPTH]
    start, end = ops.start[positions], ops.end[positions]
    return _Rows(view, (end - start).astype(np.float64), "CPU thread",
                 ops.tid[positions].tolist(),
                 ops.name[positions].tolist(), ["op"] * len(positions), start.tolist(),
                 end.tolist(), ops.depth[positions].tolist())


def _device_rows(view: RegionView, k: int) -> _Rows:
    devices = view.devices
    positions = view.device_visits[view.device_bounds[k]:view.device_bounds[k + 1]]
    t = view.ops.trace.events
    rows = devices.row[positions]
    start, end = devices.start[positions], devices.end[positions]
    lanes = [stream if stream == stream and stream >= 0 else tid
             for stream, tid in zip(t.stream[rows].tolist(), t.tid[rows].tolist(),
                                    strict=True)]
    return _Rows(view, (end - start).astype(np.float64), "stream", lanes,
                 devices.name[positions].tolist(),
                 [DEVICE_KINDS[kind] for kind in devices.kind[positions].tolist()],
                 start.tolist(), end.tolist(), [0] * len(positions))
