"""The region's CPU ops: a flat table by name and a call tree aggregated over instances.

A region pass (see :mod:`attnprof.analysis.passes`). The tree merges instances by
call path (the chain of op names from the region down), so a node's ``per_forward`` is how
many times per forward that exact path ran; times are totals over all instances, in µs.

The walk over the ops only assigns each visited op to a tree node; durations are then
summed per node and per name with ``np.bincount``, so memory stays one integer per op even
on traces with millions of ops.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnprof.analysis.index.views import RegionView
from attnprof.record.trace_report import OpNode, OpStat

__all__ = ["summarize_ops"]


@dataclass
class _Node:
    name: int
    index: int
    count: int = 0
    children: dict[int, _Node] = field(default_factory=dict)


def summarize_ops(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``ops`` (flat, by self time) and ``tree`` (call paths, in first-run order)."""
    ops = view.ops
    strings = ops.trace.events.strings
    nodes: list[_Node] = []
    roots = _Node(-1, -1)
    # 8 bytes per visit (not a Python int object each): millions of ops stay cheap.
    visited = array("q")  # op positions, in visit order
    node_of = array("q")  # the tree node each visit counts towards
    for k, spans in enumerate(view.op_spans):
        # Stack of (op position, tree node) along the current path. An op whose parent is
        # not on it (the annotation, or an op that began before the window) is a root.
        stack: list[tuple[int, _Node]] = [(view.instance_root(k), roots)]
        for i in (i for span in spans for i in span):
            parent = int(ops.parent[i])
            while len(stack) > 1 and stack[-1][0] != parent:
                stack.pop()
            name = int(ops.name[i])
            node = stack[-1][1].children.get(name)
            if node is None:
                node = stack[-1][1].children[name] = _Node(name, len(nodes))
                nodes.append(node)
            node.count += 1
            visited.append(i)
            node_of.append(node.index)
            stack.append((i, node))
    pos = np.frombuffer(visited, dtype=np.int64) if visited else np.empty(0, np.int64)
    dur, self_us = ops.dur[pos], ops.self_us[pos]
    per_node = np.frombuffer(node_of, dtype=np.int64) if node_of else np.empty(0, np.int64)
    node_total = np.bincount(per_node, weights=dur, minlength=len(nodes))
    node_self = np.bincount(per_node, weights=self_us, minlength=len(nodes))
    names, per_name = np.unique(ops.name[pos], return_inverse=True)
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

    def freeze(node: _Node) -> OpNode:
        return OpNode(name=strings[node.name], per_forward=node.count / n,
                      total_us=float(node_total[node.index]),
                      self_us=float(node_self[node.index]),
                      children=[freeze(c) for c in node.children.values()])

    return {"ops": stats, "tree": [freeze(c) for c in roots.children.values()]}
