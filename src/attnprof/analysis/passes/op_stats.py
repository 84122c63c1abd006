"""The region's CPU ops: a flat table by name and a call tree aggregated over instances.

A region pass (see :mod:`attnprof.analysis.passes`). The tree merges instances by
call path (the chain of op names from the region down), so a node's ``per_forward`` is how
many times per forward that exact path ran; times are totals over all instances, in µs. It
keeps :data:`TREE_DEPTH` levels.

Each visited op is assigned a tree node, level by level (:func:`_tree_nodes`, interned as
:mod:`attnprof.analysis.index.call_paths` interns an op's call path); durations
are then summed per node and per name with ``np.bincount``, so memory stays one integer per
op even on traces with millions of ops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attnprof.analysis.index.call_paths import PathNodes, by_level
from attnprof.analysis.index.pairs import unique_ids
from attnprof.analysis.index.views import RegionView
from attnprof.record.trace_report import OpNode, OpStat

__all__ = ["TREE_DEPTH", "summarize_ops"]

#: Levels of the call tree a report keeps. Real traces nest a few dozen; deeper paths
#: (seen only in broken or synthetic traces) are left out of the tree, their time still in
#: their ancestors' totals and in the flat table, so that the report stays encodable
#: (msgspec, like any JSON library, encodes nested values recursively).
TREE_DEPTH = 128


def summarize_ops(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``ops`` (flat, by self time) and ``tree`` (call paths, in first-run order)."""
    ops = view.ops
    strings = ops.trace.events.strings
    pos = view.op_positions
    node_of, parent, name, first = _tree_nodes(view)
    dur, self_us = ops.dur[pos], ops.self_us[pos]
    node_total = np.bincount(node_of, weights=dur, minlength=len(parent))
    node_self = np.bincount(node_of, weights=self_us, minlength=len(parent))
    node_count = np.bincount(node_of, minlength=len(parent))
    distinct_names = unique_ids(ops.name[pos])
    names, per_name = distinct_names.first, distinct_names.inverse
    counts = np.bincount(per_name, minlength=len(names))
    name_total = np.bincount(per_name, weights=dur, minlength=len(names))
    name_self = np.bincount(per_name, weights=self_us, minlength=len(names))
    n = view.n or 1
    stats = [
        OpStat(name=strings[int(sid)], count=int(c), per_forward=int(c) / n,
               self_us=float(s), total_us=float(t))
        for sid, c, s, t in zip(names.tolist(), counts.tolist(), name_self.tolist(),
                                name_total.tolist(), strict=True)
    ]
    stats.sort(key=lambda s: (-s.self_us, s.name))
    # Built without recursion: op trees from odd traces can nest thousands deep.
    nodes = [OpNode(name=strings[nm], per_forward=c / n, total_us=t, self_us=s)
             for nm, c, t, s in zip(name.tolist(), node_count.tolist(), node_total.tolist(),
                                    node_self.tolist(), strict=True)]
    depth = [0] * len(nodes)
    for k, p in enumerate(parent.tolist()):  # a parent node is made before its children
        depth[k] = depth[p] + 1 if p >= 0 else 0
    tree: list[OpNode] = []
    for k in np.argsort(first, kind="stable").tolist():  # children in first-run order
        if depth[k] < TREE_DEPTH:
            p = int(parent[k])
            (tree if p < 0 else nodes[p].children).append(nodes[k])
    return {"ops": stats, "tree": tree}


def _tree_nodes(view: RegionView) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The call-path node of every visit of the region's ops, and per node its parent node
    (-1: a root), name id and first visit.

    A visit's parent is the visit of its op's parent in the same span; an op whose parent
    lies outside the span (the annotation, or an op that began before the window) is a root.
    Parents are one nesting level up, so the visits are taken level by level, each level in
    a few numpy calls.
    """
    ops = view.ops
    pos = view.op_positions
    size = len(pos)
    parent_op = ops.parent[pos]
    in_span = parent_op >= view.spans.lo[view.visit_span]
    up = np.where(in_span, np.arange(size) - (pos - parent_op), -1)
    node_of = np.full(size, -1, dtype=np.int64)
    nodes = PathNodes()
    for level in by_level(ops.depth[pos]):  # in visit order
        above = up[level]
        base = np.where(above >= 0, node_of[np.maximum(above, 0)], -1)
        node_of[level] = nodes.extend(base, ops.name[pos[level]], level)
    return (node_of, *nodes.arrays())
