"""Call paths: the chain of op names from a thread's top down to each op, interned once.

Kernels are grouped by (name, call path) and CPU ops form a tree by call path, so the same
path is asked for again and again. Instead of walking up the parents per kernel, every op
gets a path *node* once, computed level by level (all ops at one nesting depth in a few
numpy calls): a node is its parent node plus one name, so equal paths are equal integers.

The path follows :func:`~attnprof.analysis.passes.kernel_stats` conventions: user
annotations are left out (foreign traces wrap warm-up and measured iterations in
differently named ranges), and consecutive repeats of one name collapse into one (vmap and
decompositions nest ``aten::le`` in ``aten::le`` ten deep).

The interning itself (:class:`PathNodes`, :func:`by_level`) is shared with the region's op
tree (:mod:`attnprof.analysis.passes.op_stats`), which interns the visits of a region's
ops the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import numpy as np

from attnprof.analysis.index.pairs import levels_order, unique_pairs

__all__ = ["EMPTY_PATH", "CallPaths", "PathNodes", "by_level", "call_paths"]

#: The node of the empty path (a top-level op's parent, or only annotations above).
EMPTY_PATH = 0


class CallPaths(msgspec.Struct, frozen=True):
    """Path nodes: ``of_op[i]`` is the node of op ``i``'s path (the op's own name included,
    unless it is an annotation or repeats its parent's); node ``k`` is ``parent[k]``'s path
    plus the name id ``name[k]``."""

    of_op: np.ndarray
    parent: np.ndarray
    name: np.ndarray

    def names(self, node: int) -> tuple[int, ...]:
        """The name ids along the path of ``node``, outermost first."""
        out: list[int] = []
        while node > EMPTY_PATH:
            out.append(int(self.name[node]))
            node = int(self.parent[node])
        return tuple(reversed(out))


class PathNodes:
    """Paths interned as integers: node ``k`` is node ``parent[k]``'s path (-1: none) plus
    the name id ``name[k]``, so equal paths are equal nodes; ``first[k]`` is the earliest
    visit that reached it (when visits are given)."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.name: list[int] = []
        self.first: list[int] = []
        self._known: dict[tuple[int, int], int] = {}

    def add(self, parent: int, name: int, first: int = 0) -> int:
        """The node of ``parent``'s path plus ``name``, made if new."""
        node = self._known.get((parent, name))
        if node is None:
            node = self._known[(parent, name)] = len(self.parent)
            self.parent.append(parent)
            self.name.append(name)
            self.first.append(first)
        elif first < self.first[node]:
            self.first[node] = first
        return node

    def extend(self, base: np.ndarray, name: np.ndarray,
               visit: np.ndarray | None = None) -> np.ndarray:
        """The node of each ``base[i]``'s path plus ``name[i]`` (one dict look-up per
        distinct pair, not per element); ``visit[i]`` is element ``i``'s visit."""
        pairs = unique_pairs(base, name)
        firsts = visit[pairs.index].tolist() if visit is not None else [0] * len(pairs.first)
        ids = [self.add(b, nm, v) for b, nm, v in zip(
            pairs.first.tolist(), pairs.second.tolist(), firsts, strict=True)]
        return np.array(ids, dtype=np.int64)[pairs.inverse]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``parent``, ``name`` and ``first`` as int64 arrays."""
        return (np.array(self.parent, dtype=np.int64), np.array(self.name, dtype=np.int64),
                np.array(self.first, dtype=np.int64))


def by_level(depth: np.ndarray) -> Iterator[np.ndarray]:
    """Positions of ``depth`` one nesting level at a time, shallowest first, each level in
    input order: a parent, one level up, is always seen before its children."""
    if not len(depth):
        return
    order = levels_order(depth)
    start = 0
    for stop in np.cumsum(np.bincount(depth)).tolist():
        if stop > start:
            yield order[start:stop]
        start = stop


def call_paths(depth: np.ndarray, parent: np.ndarray, name: np.ndarray,
               annotation: np.ndarray) -> CallPaths:
    """The path node of every op (see the module doc), from the ops' arrays (those of an
    :class:`~attnprof.analysis.index.op_index.OpIndex`): nesting depth, parent position
    (-1: top level), name id and whether the op is a user annotation."""
    of_op = np.zeros(len(depth), dtype=np.int64)
    nodes = PathNodes()
    # The empty path's "name" matches no op, not even one without a name (id -1).
    nodes.add(-1, -2)
    for level in by_level(depth):
        up = parent[level]
        base = np.where(up >= 0, of_op[np.maximum(up, 0)], EMPTY_PATH)
        names = name[level].astype(np.int64)
        same = annotation[level] | (np.asarray(nodes.name, dtype=np.int64)[base] == names)
        of_op[level[same]] = base[same]
        new = ~same
        if new.any():
            of_op[level[new]] = nodes.extend(base[new], names[new])
    node_parent, node_name, _ = nodes.arrays()
    return CallPaths(of_op=of_op, parent=node_parent, name=node_name)
