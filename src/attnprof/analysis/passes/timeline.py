"""One profiled step as it ran, for the report's timeline: the ops of one region instance
and the device events it launched, each on its lane (CPU thread or device stream).

A pure function of the region views. It picks the first region with work and, of its
instances, the one of median length (the first steps of a capture pay warm-up costs the
others do not); ops down to :data:`MAX_DEPTH` levels of each thread's tree are kept, so
the picture shows the step's structure rather than every leaf. At most :data:`LIMIT`
events are kept, the longest, and the record says how many there were.
"""

from __future__ import annotations

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
        events = _ops(view, k) + _device(view, k)
        if not events:
            continue
        total = len(events)
        if total > LIMIT:  # the longest are what a reader looks for
            events = sorted(events, key=lambda e: -e.dur_us)[:LIMIT]
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


def _ops(view: RegionView, k: int) -> list[TimelineEvent]:
    ops = view.ops
    positions = distinct(view.instance_ops(k))
    positions = positions[ops.depth[positions] <= MAX_DEPTH]
    names = ops.trace.events.strings
    return [TimelineEvent(lane=f"CPU thread {tid}", name=names[int(sid)], kind="op",
                          start_us=float(start), dur_us=float(end - start), depth=int(depth))
            for tid, sid, start, end, depth in zip(
                ops.tid[positions].tolist(), ops.name[positions].tolist(),
                ops.start[positions].tolist(), ops.end[positions].tolist(),
                ops.depth[positions].tolist(), strict=True)]


def _device(view: RegionView, k: int) -> list[TimelineEvent]:
    devices = view.devices
    positions = view.device_visits[view.device_bounds[k]:view.device_bounds[k + 1]]
    if not len(positions):
        return []
    t = view.ops.trace.events
    rows = devices.row[positions]
    streams = t.stream[rows].tolist()
    tids = t.tid[rows].tolist()
    names = t.strings
    return [TimelineEvent(lane=f"stream {stream if stream == stream and stream >= 0 else tid}",
                          name=names[int(sid)], kind=DEVICE_KINDS[int(kind)],
                          start_us=float(start), dur_us=float(end - start))
            for stream, tid, sid, kind, start, end in zip(
                streams, tids, devices.name[positions].tolist(),
                devices.kind[positions].tolist(), devices.start[positions].tolist(),
                devices.end[positions].tolist(), strict=True)]
