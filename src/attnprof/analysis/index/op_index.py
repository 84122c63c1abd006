"""The CPU ops of a trace as a nesting forest: who called whom, found by time containment.

torch.profiler writes each ATen op (``cpu_op``) and each ``record_function`` range
(``user_annotation``) as a complete event with a start and a duration, but not its parent.
On one thread, op B runs inside op A exactly when B starts before A ends, so sorting a
thread's events by (start, longest first) and keeping a stack recovers the call tree.

:func:`index_cpu_ops` does that once per trace. Positions in the index are "op ids": ops
are ordered by (pid, tid, start, -duration), so the subtree of op ``i`` is the contiguous
range ``i .. last[i]`` and every region, op-tree and launch lookup is a slice or a walk up
``parent``. Events on other threads never nest into each other.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import msgspec
import numpy as np

from attnprof.analysis.index.call_paths import CallPaths, call_paths
from attnprof.analysis.index.nesting import nest
from attnprof.analysis.index.pairs import names_matching, unique_pairs
from attnprof.knowledge.trace_categories import OP_CATEGORIES
from attnprof.trace import Trace

__all__ = ["OpIndex", "index_cpu_ops"]

#: Trace categories of CPU-side ranges that form the op tree.

_json = msgspec.json.Decoder()


class OpIndex(msgspec.Struct, frozen=True, dict=True):
    """CPU ops sorted by (pid, tid, start, -duration), with their nesting.

    Every array has one entry per op; ``row`` is the op's row in the trace's event table.
    ``parent`` is -1 for a thread's top-level ops; ``last[i]`` is the position of the last
    op in ``i``'s subtree (``i`` itself for a leaf).
    """

    trace: Trace
    row: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray  # string ids
    annotation: np.ndarray  # bool: a user_annotation, not an ATen op
    parent: np.ndarray
    last: np.ndarray
    threads: dict[tuple[int, int], tuple[int, int]]  # (pid, tid) -> [lo, hi) positions
    depth: np.ndarray  # ancestors on the op's thread (0: top level)

    def __len__(self) -> int:
        return len(self.row)

    @cached_property
    def dur(self) -> np.ndarray:
        """Duration of every op, µs (computed once: rules index it op by op)."""
        return self.end - self.start

    def name_of(self, i: int) -> str:
        """The op's name."""
        return self.trace.events.strings[int(self.name[i])]

    @cached_property
    def names(self) -> list[str]:
        """Every op's name, by position (for rules that scan many ops)."""
        # Id -1 (absent) indexes the "" appended at the end, as StringTable[-1] gives "";
        # map over the tuple's own __getitem__ keeps the loop in C.
        table = (*self.trace.events.strings.values, "")
        return list(map(table.__getitem__, self.name.tolist()))

    @cached_property
    def paths(self) -> CallPaths:
        """Every op's call path as an interned node (see :mod:`.call_paths`)."""
        return call_paths(self.depth, self.parent, self.name, self.annotation)

    @cached_property
    def self_us(self) -> np.ndarray:
        """Each op's duration minus its direct children's (never negative)."""
        child = np.zeros(len(self), dtype=np.float64)
        has = self.parent >= 0
        np.add.at(child, self.parent[has], self.dur[has])
        return np.maximum(self.dur - child, 0.0)

    def ancestors(self, i: int, stop: int = -1) -> Iterator[int]:
        """Parents of op ``i``, innermost first, up to (not including) ``stop``."""
        j = int(self.parent[i])
        while j >= 0 and j != stop:
            yield j
            j = int(self.parent[j])

    def children(self, i: int) -> Iterator[int]:
        """Direct children of op ``i``, in time order."""
        j = i + 1
        while j <= self.last[i]:
            yield j
            j = int(self.last[j]) + 1

    def enclosing(self, pid: int, tid: int, ts: float) -> int:
        """The innermost op on thread (pid, tid) whose time range holds ``ts``, else -1."""
        bounds = self.threads.get((pid, tid))
        if bounds is None:
            return -1
        lo, hi = bounds
        j = lo + int(np.searchsorted(self.start[lo:hi], ts, side="right")) - 1
        # The ops holding ts form a chain that ends at or above the last op starting before it.
        while j >= lo and self.end[j] < ts:
            j = int(self.parent[j])
        return j if j >= lo else -1

    def enclosing_many(self, pid: np.ndarray, tid: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """:meth:`enclosing` for many moments at once (one binary search per thread, then
        every walk up the parents in step)."""
        out = np.full(len(ts), -1, dtype=np.int64)
        if not len(ts) or not len(self):
            return out
        lo_of = np.full(len(ts), 0, dtype=np.int64)
        found = unique_pairs(pid, tid)
        which = found.inverse
        for g, (p, t) in enumerate(zip(found.first.tolist(), found.second.tolist(),
                                       strict=True)):
            bounds = self.threads.get((p, t))
            if bounds is None:
                continue
            lo, hi = bounds
            mine = np.flatnonzero(which == g)
            out[mine] = lo + np.searchsorted(self.start[lo:hi], ts[mine], side="right") - 1
            lo_of[mine] = lo
        # The ops holding ts form a chain that ends at or above the last op starting before
        # it: walk up, all moments together, until each finds one that holds it.
        walking = np.flatnonzero(out >= lo_of)
        while len(walking):
            j = out[walking]
            out_of = self.end[j] < ts[walking]
            walking = walking[out_of]
            out[walking] = self.parent[out[walking]]
            walking = walking[out[walking] >= lo_of[walking]]
        out[out < lo_of] = -1
        return out

    def input_dims(self, i: int) -> list[Any] | None:
        """The op's ``Input Dims`` (a list per argument), or None when not recorded."""
        return self.parsed_json(int(self.trace.events.input_dims[self.row[i]]))

    def input_types(self, i: int) -> list[Any] | None:
        """The op's ``Input type`` strings, or None when not recorded."""
        return self.parsed_json(int(self.trace.events.input_types[self.row[i]]))

    def parsed_json(self, sid: int) -> list[Any] | None:
        """The JSON list held as text by string id ``sid`` (None: -1, or not a list)."""
        if sid < 0:
            return None
        cache = self._json_cache
        if sid not in cache:
            try:
                value = _json.decode(self.trace.events.strings[sid])
            except (msgspec.DecodeError, RecursionError):  # not JSON, or absurdly nested
                value = None
            cache[sid] = value if isinstance(value, list) else None
        return cache[sid]

    @cached_property
    def _json_cache(self) -> dict[int, list[Any] | None]:
        return {}

    @cached_property
    def cache(self) -> dict[str, Any]:
        """What other modules derive from the index, kept with it so it is derived once."""
        return {}

    def inside(self, pattern: re.Pattern[str]) -> np.ndarray:
        """Per op: whether it, or an op it runs inside, has a name matching ``pattern``.

        A subtree is one contiguous range of positions, so each matching op marks one range
        (a difference array, then a running sum). Computed once per pattern and index.
        """
        cache = self._inside_cache
        if pattern.pattern not in cache:
            roots = np.flatnonzero(names_matching(self.name,
                                                  self.trace.events.strings.__getitem__,
                                                  pattern))
            cache[pattern.pattern] = self.subtrees(roots)
        return cache[pattern.pattern]

    def subtrees(self, roots: np.ndarray, *, strict: bool = False) -> np.ndarray:
        """Per op: whether it lies in the subtree of one of ``roots`` (positions), the
        roots included unless ``strict``. A subtree is one contiguous range of positions:
        a difference array over the ranges, then a running sum."""
        cover = np.zeros(len(self) + 1, dtype=np.int64)
        np.add.at(cover, roots + (1 if strict else 0), 1)
        np.add.at(cover, self.last[roots] + 1, -1)
        return np.cumsum(cover[:-1]) > 0

    @cached_property
    def _inside_cache(self) -> dict[str, np.ndarray]:
        return {}

    @cached_property
    def external_ids(self) -> dict[int, int]:
        """``External id`` -> op position (the outermost op carrying it)."""
        ids, first = self._external_index
        return dict(zip(ids.tolist(), first.tolist(), strict=True))

    def with_external_id(self, ext: np.ndarray) -> np.ndarray:
        """The op position carrying each ``External id`` in ``ext`` (the outermost, i.e.
        first, one), -1 for ids no op carries. Ids are numbered from 1: a 0, like -1, is
        no id (kineto writes 0 where an event has none)."""
        ids, first = self._external_index
        ext = np.asarray(ext, dtype=np.int64)
        at = np.clip(np.searchsorted(ids, ext), 0, max(len(ids) - 1, 0))
        hit = (ext > 0) & (len(ids) > 0)
        if len(ids):
            hit &= ids[at] == ext
        return np.where(hit, first[at] if len(ids) else -1, -1)

    @cached_property
    def _external_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct ``External id`` values and the first op position carrying each."""
        ext = self.trace.events.external_id[self.row]
        carrying = np.flatnonzero(ext > 0)
        # np.unique(return_index=True), by one stable sort: ids come nearly in order.
        order = carrying[np.argsort(ext[carrying], kind="stable")]
        ordered = ext[order]
        starts = np.r_[True, ordered[1:] != ordered[:-1]] if len(ordered) else np.zeros(0, bool)
        return ordered[starts].astype(np.int64), order[starts]


def index_cpu_ops(trace: Trace) -> OpIndex:
    """Sort the trace's CPU ops and annotations per thread and recover their nesting."""
    t = trace.events
    keep = t.mask_ph("X") & t.mask_cat(*OP_CATEGORIES) & t.mask_timed()
    rows = np.flatnonzero(keep)
    pid, tid, ts, dur = t.pid[rows], t.tid[rows], t.ts[rows], t.dur[rows]
    order = _thread_time_order(pid, tid, ts, dur)
    rows, pid, tid, ts, dur = rows[order], pid[order], tid[order], ts[order], dur[order]
    end = ts + dur
    nesting = nest(pid, tid, ts, end)
    annotation = t.mask_cat("user_annotation")[rows]
    return OpIndex(trace=trace, row=rows, pid=pid, tid=tid, start=ts, end=end, name=t.name[rows],
                   annotation=annotation, parent=nesting.parent, last=nesting.last,
                   threads=nesting.threads, depth=nesting.depth)


def _thread_time_order(pid: np.ndarray, tid: np.ndarray, ts: np.ndarray, dur: np.ndarray
                       ) -> np.ndarray:
    """``np.lexsort((-dur, ts, tid, pid))``, faster on what profilers write.

    Traces list events in time order, and numpy's stable sorts run in linear time on
    sorted runs; only the ops that start together need the longest-first tie-break, so
    only they are sorted by duration (within each group of equal starts, as lexsort would).
    """
    order = np.lexsort((ts, tid, pid))
    p, t, s = pid[order], tid[order], ts[order]
    same = (p[1:] == p[:-1]) & (t[1:] == t[:-1]) & (s[1:] == s[:-1])
    if same.any():
        tied = np.flatnonzero(np.r_[same, False] | np.r_[False, same])
        group = np.cumsum(np.r_[True, ~same])[tied]
        order[tied] = order[tied][np.lexsort((-dur[order[tied]], group))]
    return order
