"""How a thread's ops nest: parent, subtree end and depth of each, from times alone.

The ops come sorted by (thread, start, longest first). The definition is a stack sweep
(:func:`_swept`): an op is inside the latest earlier op of its thread that has not ended
when it starts (starting at or after an op's end is not inside it). Every subtree is then
one contiguous range of positions.

The sweep is a Python loop over every op, the slowest step of indexing a trace with
millions of them. :func:`nest` finds the same tree with a few numpy passes when the ops are
properly nested, as profilers write them: an op's depth is how many earlier ops of its
thread are still open when it starts (all ops ended by then, counted by binary search, set
against all earlier ones), and its parent is the last earlier op one level up. It then
proves the tree is the sweep's: when every op starts before its parent ends and ends by
then too, the ops open at its start are exactly its ancestors, so the latest of them is its
parent. A trace where that does not hold (a child outliving its parent, seen in broken
traces) or that nests absurdly deep is swept instead.
"""

from __future__ import annotations

from itertools import pairwise

import msgspec
import numpy as np

from attnprof.analysis.index.pairs import levels_order

__all__ = ["Nesting", "nest"]

#: Deeper than this, the level-by-level subtree ends would take more numpy calls than the
#: sweep takes Python steps; real traces nest a few dozen levels.
_MAX_LEVELS = 512


class Nesting(msgspec.Struct, frozen=True):
    """Per op: ``parent`` (-1 at a thread's top), ``last`` (the subtree's last position),
    ``depth`` (ancestors); and each thread's ``(pid, tid) -> [lo, hi)`` positions."""

    parent: np.ndarray
    last: np.ndarray
    depth: np.ndarray
    threads: dict[tuple[int, int], tuple[int, int]]


def nest(pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray) -> Nesting:
    """The nesting of ops sorted by (pid, tid, start, -duration); see the module doc."""
    n = len(start)
    if n == 0:
        empty = np.empty(0, dtype=np.int64)
        return Nesting(empty, empty, empty, {})
    cut = np.flatnonzero((pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])) + 1
    bounds = np.r_[0, cut, n]
    threads = {(int(pid[lo]), int(tid[lo])): (int(lo), int(hi))
               for lo, hi in pairwise(bounds.tolist())}
    found = _by_depth(start, end, bounds)
    if found is None:
        found = _swept(start, end, bounds)
    return Nesting(*found, threads=threads)


def _by_depth(start: np.ndarray, end: np.ndarray, bounds: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(parent, last, depth) by counting open ops, or None when the proof fails."""
    n = len(start)
    parent = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    depth = np.empty(n, dtype=np.int64)
    # Thread by thread, in 32-bit positions: few, small temporaries (every large new array
    # costs page faults, which on a VM cost more than the arithmetic).
    for a, b in pairwise(bounds.tolist()):
        found = _thread(start[a:b], end[a:b])
        if found is None:
            return None
        parent[a:b], last[a:b], depth[a:b] = found
        parent[a:b][parent[a:b] >= 0] += a
        last[a:b] += a
    return parent, last, depth


def _thread(start: np.ndarray, end: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`_by_depth` of one thread's ops, positions from 0."""
    n = len(start)
    pos = np.arange(n, dtype=np.int32)
    # How many ops have ended when each starts: a binary search among the sorted ends
    # (starts are sorted already). Ends in start order are runs of increasing values
    # (siblings), which the stable sort (timsort) merges in near-linear time.
    closed = np.searchsorted(np.sort(end, kind="stable"), start, side="right").astype(np.int32)
    flat = end == start
    if flat.any():
        # Of those, the ones at or after the op itself can only be ops of no extent starting
        # with it: the tail of its group of equal starts (sorted longest first).
        first = np.r_[True, start[1:] != start[:-1]]
        group = np.cumsum(first, dtype=np.int32) - 1
        group_end = np.r_[np.flatnonzero(first)[1:], n].astype(np.int32)[group]
        flat_start = group_end - np.bincount(group, weights=flat).astype(np.int32)[group]
        closed -= np.maximum(group_end - np.maximum(pos, flat_start), 0)
    depth = pos - closed  # ops still open when each starts: its depth
    levels = int(depth.max()) + 1
    if levels > _MAX_LEVELS:
        return None
    # The parent: the last earlier op one level up. Ops grouped by depth, each group in
    # position order, so each level searches the one above it in order.
    by_depth = levels_order(depth)
    level_ends = np.cumsum(np.bincount(depth, minlength=levels))
    parent = np.full(n, -1, dtype=np.int64)
    for d in range(1, levels):
        above = by_depth[level_ends[d - 2] if d > 1 else 0:level_ends[d - 1]]
        here = by_depth[level_ends[d - 1]:level_ends[d]]
        at = np.searchsorted(above, here) - 1
        if len(here) and at.min() < 0:
            return None  # no earlier op one level up: not nested the way the sweep sees it
        parent[here] = above[at]
    # The proof: each op starts before its parent ends and ends by then too.
    up = end[np.maximum(parent, 0)]
    if not np.all((parent < 0) | ((start < up) & (end <= up))):
        return None
    # Subtree ends, deepest level first: an op's last position is its last descendant's.
    last = pos.astype(np.int64)
    for d in range(levels - 1, 0, -1):
        ops = by_depth[level_ends[d - 1]:level_ends[d]]
        np.maximum.at(last, parent[ops], last[ops])
    return parent, last, depth.astype(np.int64)


def _swept(start: np.ndarray, end: np.ndarray, bounds: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parent, last, depth) by the stack sweep that defines them."""
    n = len(start)
    s_list, e_list = start.tolist(), end.tolist()
    par = [-1] * n
    lst = list(range(n))
    dep = [0] * n
    for lo, hi in pairwise(bounds.tolist()):
        stack: list[int] = []
        for i in range(lo, hi):
            s = s_list[i]
            # An op that starts at or after the top's end is not inside it. (One that starts
            # inside but ends after, which a well-formed trace never has, counts as nested.)
            while stack and s >= e_list[stack[-1]]:
                lst[stack.pop()] = i - 1
            if stack:
                par[i] = stack[-1]
                dep[i] = len(stack)
            stack.append(i)
        for j in stack:
            lst[j] = hi - 1
    return (np.array(par, dtype=np.int64), np.array(lst, dtype=np.int64),
            np.array(dep, dtype=np.int64))
