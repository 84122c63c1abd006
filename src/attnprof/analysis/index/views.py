"""What each region holds: its CPU ops and the device events its launches started.

:func:`view_regions` is the collect step of the analysis: it indexes, once, which ops and
which device events belong to each instance of each region, and the region passes then only
read these views. Device events are assigned by where their *launch* happened (the CPU
side), never by when they ran, since kernels run after the op that launched them returns.

An instance's ops are its annotation's subtree plus, on every other thread, the ops that
start inside its time window: one contiguous range (a *span*) per thread, since each
thread's ops are sorted by start time.

Everything is kept flat, for all instances at once, so that a trace with tens of thousands
of steps costs a few numpy calls rather than a Python loop per step: the spans in instance
order, the *visits* (each op of each span, in order; an op inside two overlapping windows
is visited twice), and the device events of each instance, with per-instance bounds.
"""

from __future__ import annotations

from functools import cached_property

import msgspec
import numpy as np

from attnprof.analysis.index.compute_ops import compute_visits
from attnprof.analysis.index.device_events import DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import unique_ids
from attnprof.analysis.index.regions import WHOLE_TRACE, Instance, Region

__all__ = ["RegionView", "Spans", "flat_ranges", "view_regions"]


def flat_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The integers of every range ``[lo[j], hi[j])`` one after another, and the bounds
    (``bounds[j]:bounds[j + 1]`` are range ``j``'s); empty ranges take no room."""
    lo = np.asarray(lo, dtype=np.int64)
    counts = np.maximum(np.asarray(hi, dtype=np.int64) - lo, 0)
    bounds = np.zeros(len(lo) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    flat = np.repeat(lo - bounds[:-1], counts) + np.arange(bounds[-1], dtype=np.int64)
    return flat, bounds


class Spans(msgspec.Struct, frozen=True):
    """Op position ranges ``[lo, hi)``, each belonging to one ``instance``, ordered by
    instance and, within one, annotation subtree first, then the other threads."""

    lo: np.ndarray
    hi: np.ndarray
    instance: np.ndarray


class RegionView(msgspec.Struct, frozen=True, dict=True):
    """One region's instances with their op spans and device events."""

    region: Region
    ops: OpIndex
    devices: DeviceEvents
    spans: Spans
    #: Positions in ``devices`` of each instance's events: ``device_bounds[k]:[k + 1]``.
    device_visits: np.ndarray
    device_bounds: np.ndarray
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

    # ---- the ops, visited ---------------------------------------------------------------
    @cached_property
    def _visits(self) -> tuple[np.ndarray, np.ndarray]:
        return flat_ranges(self.spans.lo, self.spans.hi)

    @property
    def op_positions(self) -> np.ndarray:
        """Every op inside any instance: instance by instance, span by span, in order."""
        return self._visits[0]

    @cached_property
    def visit_span(self) -> np.ndarray:
        """The span each of :attr:`op_positions` belongs to."""
        bounds = self._visits[1]
        return np.repeat(np.arange(len(bounds) - 1, dtype=np.int64), np.diff(bounds))

    @cached_property
    def visit_instance(self) -> np.ndarray:
        """The instance each of :attr:`op_positions` belongs to."""
        return self.spans.instance[self.visit_span]

    @cached_property
    def op_bounds(self) -> np.ndarray:
        """Instance ``k``'s visits are ``op_positions[op_bounds[k]:op_bounds[k + 1]]``."""
        return self._per_instance(self.visit_instance)

    def _per_instance(self, instance: np.ndarray) -> np.ndarray:
        bounds = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(instance, minlength=self.n), out=bounds[1:])
        return bounds

    def instance_ops(self, k: int) -> np.ndarray:
        """Positions of the ops inside instance ``k``."""
        return self.op_positions[self.op_bounds[k]:self.op_bounds[k + 1]]

    @cached_property
    def op_names(self) -> list[str]:
        """Distinct op names inside the region, in first-seen order."""
        strings = self.ops.trace.events.strings
        found = unique_ids(self.ops.name[self.op_positions])
        return [strings[i] for i in found.first[np.argsort(found.index)].tolist()]

    def instance_root(self, k: int) -> int:
        """The annotation op of instance ``k`` (-1 for the whole trace)."""
        return self.region.instances[k].op

    @cached_property
    def roots(self) -> np.ndarray:
        """The annotation op of every instance (-1 for the whole trace)."""
        return np.array([inst.op for inst in self.region.instances], dtype=np.int64)

    def instance_counts(self, positions: list[int] | np.ndarray) -> np.ndarray:
        """How many of the op ``positions`` fall inside each instance (one count each)."""
        pos = np.sort(np.asarray(positions, dtype=np.int64))
        s = self.spans
        inside = np.searchsorted(pos, s.hi, side="left") - np.searchsorted(pos, s.lo, side="left")
        return np.bincount(s.instance, weights=inside, minlength=self.n).astype(np.int64)

    @cached_property
    def op_spans(self) -> tuple[tuple[range, ...], ...]:
        """Per instance, its op position ranges (see :attr:`spans`)."""
        out: list[list[range]] = [[] for _ in range(self.n)]
        s = self.spans
        for lo, hi, k in zip(s.lo.tolist(), s.hi.tolist(), s.instance.tolist(), strict=True):
            out[k].append(range(lo, hi))
        return tuple(tuple(r) for r in out)

    # ---- compute ops (CPU-only traces) --------------------------------------------------
    @cached_property
    def _compute(self) -> tuple[np.ndarray, np.ndarray]:
        span = self.visit_span
        return compute_visits(self.ops, self.op_positions, self.spans.lo[span],
                              self.spans.hi[span])

    @property
    def compute_mask(self) -> np.ndarray:
        """Which visits (of :attr:`op_positions`) are compute ops (see :mod:`.compute_ops`)."""
        return self._compute[0]

    @property
    def compute_us(self) -> np.ndarray:
        """The work time, µs, of every visit (meaningful where :attr:`compute_mask` is)."""
        return self._compute[1]

    @cached_property
    def compute_of(self) -> tuple[np.ndarray, ...]:
        """Compute ops per instance."""
        chosen = self.compute_mask
        return self._split(self.op_positions[chosen], self.visit_instance[chosen])

    @cached_property
    def compute_us_of(self) -> tuple[np.ndarray, ...]:
        """The work time of each of :attr:`compute_of`, µs."""
        chosen = self.compute_mask
        return self._split(self.compute_us[chosen], self.visit_instance[chosen])

    def _split(self, values: np.ndarray, instance: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(np.split(values, self._per_instance(instance)[1:-1]))

    # ---- device events ------------------------------------------------------------------
    @cached_property
    def device_of(self) -> tuple[np.ndarray, ...]:
        """Positions in ``devices`` of each instance's events."""
        return tuple(np.split(self.device_visits, self.device_bounds[1:-1]))

    @cached_property
    def device_instance(self) -> np.ndarray:
        """The instance each of :attr:`device_visits` belongs to."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.device_bounds))


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
        insts = region.instances
        if region.name == WHOLE_TRACE:
            # The whole trace is the region: every device event is in it.
            visits = np.tile(np.arange(len(devices), dtype=np.int64), len(insts))
            bounds = np.arange(len(insts) + 1, dtype=np.int64) * len(devices)
        else:
            # Any process: a trace is one process's view, and edited traces may relabel pids.
            lo = np.searchsorted(launch_ts, [i.start for i in insts], side="left")
            hi = np.searchsorted(launch_ts, [i.end for i in insts], side="right")
            at, bounds = flat_ranges(lo, hi)
            owner = np.repeat(np.arange(len(insts)), np.diff(bounds))
            visits = by_launch[at]
            visits = visits[np.lexsort((visits, owner))]  # each instance's in trace order
        assigned[visits] = True
        views.append(RegionView(region=region, ops=ops, devices=devices,
                                spans=_op_spans(ops, insts), device_visits=visits,
                                device_bounds=bounds, on_device=on_device,
                                trace_device=trace_device))
    return views, np.flatnonzero(~assigned)


def _op_spans(ops: OpIndex, insts: tuple[Instance, ...]) -> Spans:
    """Every instance's spans: its annotation's subtree, then on each other thread the ops
    starting inside its window (where there are any); the whole trace takes every thread."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []  # lo, hi, instance, slot
    root = np.array([i.op for i in insts], dtype=np.int64)
    annotated = np.flatnonzero(root >= 0)
    parts.append((root[annotated] + 1, ops.last[root[annotated]] + 1, annotated, 0))
    whole = np.flatnonzero(root < 0)
    start = np.array([i.start for i in insts], dtype=np.float64)
    end = np.array([i.end for i in insts], dtype=np.float64)
    pid = np.array([-1 if i.pid is None else i.pid for i in insts], dtype=np.int64)
    tid = np.array([-1 if i.tid is None else i.tid for i in insts], dtype=np.int64)
    for slot, ((p, t), (lo, hi)) in enumerate(ops.threads.items(), start=1):
        starts = ops.start[lo:hi]
        a = lo + np.searchsorted(starts, start[annotated], side="left")
        b = lo + np.searchsorted(starts, end[annotated], side="right")
        keep = (b > a) & ~((pid[annotated] == p) & (tid[annotated] == t))
        parts.append((a[keep], b[keep], annotated[keep], slot))
        parts.append((np.full(len(whole), lo), np.full(len(whole), hi), whole, slot))
    lo_all = np.concatenate([p[0] for p in parts]).astype(np.int64)
    hi_all = np.concatenate([p[1] for p in parts]).astype(np.int64)
    inst_all = np.concatenate([p[2] for p in parts]).astype(np.int64)
    slot_all = np.concatenate([np.full(len(p[2]), p[3], dtype=np.int64) for p in parts])
    order = np.lexsort((slot_all, inst_all))
    return Spans(lo=lo_all[order], hi=hi_all[order], instance=inst_all[order])
