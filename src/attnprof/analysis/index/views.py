"""What each region holds: its CPU ops and the device events its launches started.

:func:`view_regions` is the collect step of the analysis: it indexes, once, which ops and
which device events belong to each instance of each region, and the region passes then only
read these views. Device events are assigned by where their *launch* happened (the CPU
side), never by when they ran, since kernels run after the op that launched them returns.

An instance's ops are its annotation's subtree plus, on every other thread, the ops that
start inside its time window: one contiguous range per thread, since each thread's ops are
sorted by start time.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from attnprof.analysis.index.compute_ops import compute_ops
from attnprof.analysis.index.device_events import DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.regions import WHOLE_TRACE, Instance, Region

__all__ = ["RegionView", "view_regions"]

_NONE = np.empty(0, dtype=np.int64)
_NO_TIME = np.empty(0, dtype=np.float64)


@dataclass(frozen=True)
class RegionView:
    """One region's instances with, per instance, its op span and its device events."""

    region: Region
    ops: OpIndex
    devices: DeviceEvents
    op_spans: tuple[tuple[range, ...], ...]  # per instance: op position ranges
    device_of: tuple[np.ndarray, ...]  # positions in ``devices``, per instance
    #: Whether the trace has any device event; if not, compute ops stand in for kernels.
    on_device: bool
    #: The trace's device: "cpu", "cuda" or "rocm" (a GPU trace may lack device events).
    trace_device: str = "cpu"

    @property
    def name(self) -> str:
        return self.region.name

    @property
    def instances(self) -> tuple[Instance, ...]:
        return self.region.instances

    @property
    def n(self) -> int:
        """Number of instances (forwards/steps)."""
        return len(self.region.instances)

    @cached_property
    def _compute(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        found = []
        for spans in self.op_spans:
            parts = [compute_ops(self.ops, r) for r in spans]
            found.append((np.concatenate([p for p, _ in parts] or [_NONE]),
                          np.concatenate([w for _, w in parts] or [_NO_TIME])))
        return tuple(found)

    @property
    def compute_of(self) -> tuple[np.ndarray, ...]:
        """Compute ops per instance (see :mod:`attnprof.analysis.index.compute_ops`)."""
        return tuple(positions for positions, _ in self._compute)

    @property
    def compute_us_of(self) -> tuple[np.ndarray, ...]:
        """The work time of each of :attr:`compute_of`, µs."""
        return tuple(work for _, work in self._compute)

    def instance_counts(self, positions: list[int] | np.ndarray) -> np.ndarray:
        """How many of the op ``positions`` fall inside each instance (one count each).

        Binary search over the sorted positions per span, so it stays linear-logarithmic on
        traces with thousands of steps.
        """
        pos = np.sort(np.asarray(positions, dtype=np.int64))
        counts = np.zeros(self.n, dtype=np.int64)
        for k, spans in enumerate(self.op_spans):
            for r in spans:
                counts[k] += (np.searchsorted(pos, r.stop, side="left")
                              - np.searchsorted(pos, r.start, side="left"))
        return counts

    def instance_ops(self, k: int) -> np.ndarray:
        """Positions of the ops inside instance ``k``."""
        return np.concatenate([np.arange(r.start, r.stop) for r in self.op_spans[k]] or [_NONE])

    @cached_property
    def op_positions(self) -> np.ndarray:
        """Every op inside any instance, in order."""
        return np.concatenate([self.instance_ops(k) for k in range(self.n)] or [_NONE])

    @cached_property
    def op_names(self) -> list[str]:
        """Distinct op names inside the region, in first-seen order."""
        strings = self.ops.trace.events.strings
        ids = self.ops.name[self.op_positions]
        return [strings[i] for i in dict.fromkeys(ids.tolist())]

    def instance_root(self, k: int) -> int:
        """The annotation op of instance ``k`` (-1 for the whole trace)."""
        return self.region.instances[k].op


def view_regions(ops: OpIndex, devices: DeviceEvents, regions: list[Region],
                 trace_device: str = "cpu") -> tuple[list[RegionView], np.ndarray]:
    """Views of ``regions`` and the device events that fall in none of them."""
    assigned = np.full(len(devices), False)
    views = []
    on_device = len(devices) > 0
    # Device events by launch time, once: each instance then takes a slice (NaN sorts last).
    by_launch = np.argsort(devices.where_ts, kind="stable")
    launch_ts = devices.where_ts[by_launch]
    for region in regions:
        per_instance = []
        for inst in region.instances:
            if region.name == WHOLE_TRACE:
                # The whole trace is the region: every device event is in it.
                mine = np.arange(len(devices))
            else:
                mine = _launched_inside(by_launch, launch_ts, inst)
            assigned[mine] = True
            per_instance.append(mine)
        spans = tuple(_op_spans(ops, inst) for inst in region.instances)
        views.append(RegionView(region=region, ops=ops, devices=devices, op_spans=spans,
                                device_of=tuple(per_instance), on_device=on_device,
                                trace_device=trace_device))
    return views, np.flatnonzero(~assigned)


def _op_spans(ops: OpIndex, inst: Instance) -> tuple[range, ...]:
    if inst.op < 0:
        return tuple(range(lo, hi) for lo, hi in ops.threads.values())
    spans = [range(inst.op + 1, int(ops.last[inst.op]) + 1)]
    for (pid, tid), (lo, hi) in ops.threads.items():
        if (pid, tid) == (inst.pid, inst.tid):
            continue
        starts = ops.start[lo:hi]
        a = lo + int(np.searchsorted(starts, inst.start, side="left"))
        b = lo + int(np.searchsorted(starts, inst.end, side="right"))
        if b > a:
            spans.append(range(a, b))
    return tuple(spans)


def _launched_inside(by_launch: np.ndarray, launch_ts: np.ndarray,
                     inst: Instance) -> np.ndarray:
    # Any process: a trace is one process's view, and edited traces may relabel pids.
    lo = np.searchsorted(launch_ts, inst.start, side="left")
    hi = np.searchsorted(launch_ts, inst.end, side="right")
    return np.sort(by_launch[lo:hi])
