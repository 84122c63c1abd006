"""Call paths: the chain of op names from a thread's top down to each op, interned once.

Kernels are grouped by (name, call path) and CPU ops form a tree by call path, so the same
path is asked for again and again. Instead of walking up the parents per kernel, every op
gets a path *node* once, computed level by level (all ops at one nesting depth in a few
numpy calls): a node is its parent node plus one name, so equal paths are equal integers.

The path follows :func:`~attnprof.analysis.passes.kernel_stats` conventions: user
annotations are left out (foreign traces wrap warm-up and measured iterations in
differently named ranges), and consecutive repeats of one name collapse into one (vmap and
decompositions nest ``aten::le`` in ``aten::le`` ten deep).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attnprof.analysis.index.pairs import levels_order, unique_pairs

if TYPE_CHECKING:
    from attnprof.analysis.index.op_index import OpIndex

__all__ = ["EMPTY_PATH", "CallPaths", "call_paths"]

#: The node of the empty path (a top-level op's parent, or only annotations above).
EMPTY_PATH = 0


@dataclass(frozen=True)
class CallPaths:
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


def call_paths(ops: OpIndex) -> CallPaths:
    """The path node of every op of ``ops`` (see the module doc)."""
    n = len(ops)
    of_op = np.zeros(n, dtype=np.int64)
    # The empty path's "name" matches no op, not even one without a name (id -1).
    node_parent, node_name = [-1], [-2]
    known: dict[tuple[int, int], int] = {}
    names_now = np.array(node_name, dtype=np.int64)
    # Parents are one level up, so levels in order see every parent's node already set.
    by_depth = levels_order(ops.depth)
    ends = np.cumsum(np.bincount(ops.depth, minlength=1)) if n else np.zeros(1, np.int64)
    start = 0
    for stop in ends.tolist():
        level = by_depth[start:stop]
        start = stop
        if not len(level):
            continue
        parent = ops.parent[level]
        base = np.where(parent >= 0, of_op[np.maximum(parent, 0)], EMPTY_PATH)
        name = ops.name[level].astype(np.int64)
        same = ops.annotation[level] | (names_now[base] == name)
        of_op[level[same]] = base[same]
        new = ~same
        if not new.any():
            continue
        pairs = unique_pairs(base[new], name[new])
        ids = []
        for b, nm in zip(pairs.first.tolist(), pairs.second.tolist(), strict=True):
            node = known.get((b, nm))
            if node is None:
                node = known[(b, nm)] = len(node_parent)
                node_parent.append(b)
                node_name.append(nm)
            ids.append(node)
        of_op[level[new]] = np.array(ids, dtype=np.int64)[pairs.inverse]
        names_now = np.array(node_name, dtype=np.int64)
    return CallPaths(of_op=of_op, parent=np.array(node_parent, dtype=np.int64),
                     name=np.array(node_name, dtype=np.int64))
