"""The region's CPU ops: a flat table by name and a call tree aggregated over instances.

A region pass (see :mod:`attnprof.analysis.region_passes`). The tree merges instances by
call path (the chain of op names from the region down), so a node's ``per_forward`` is how
many times per forward that exact path ran; times are totals over all instances, in µs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from attnprof.analysis.region_view import RegionView
from attnprof.analysis.report import OpNode, OpStat

__all__ = ["summarize_ops"]


@dataclass
class _Node:
    name: int
    count: int = 0
    total: list[float] = field(default_factory=list)
    self_: list[float] = field(default_factory=list)
    children: dict[int, _Node] = field(default_factory=dict)


def summarize_ops(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``ops`` (flat, by self time) and ``tree`` (call paths, in first-run order)."""
    ops = view.ops
    strings = ops.trace.events.strings
    dur, self_us = ops.dur, ops.self_us
    flat: dict[int, _Node] = {}
    roots = _Node(-1)
    for k, spans in enumerate(view.op_spans):
        root = view.instance_root(k)
        # Stack of (op position, tree node) along the current path. An op whose parent is
        # not on it (the annotation, or an op that began before the window) is a root.
        stack: list[tuple[int, _Node]] = [(root, roots)]
        for i in (i for span in spans for i in span):
            parent = int(ops.parent[i])
            while len(stack) > 1 and stack[-1][0] != parent:
                stack.pop()
            name = int(ops.name[i])
            node = stack[-1][1].children.get(name)
            if node is None:
                node = stack[-1][1].children[name] = _Node(name)
            d, s = float(dur[i]), float(self_us[i])
            node.count += 1
            node.total.append(d)
            node.self_.append(s)
            f = flat.setdefault(name, _Node(name))
            f.count += 1
            f.total.append(d)
            f.self_.append(s)
            stack.append((i, node))
    n = view.n or 1
    stats = [
        OpStat(name=strings[f.name], count=f.count, per_forward=f.count / n,
               self_us=math.fsum(f.self_), total_us=math.fsum(f.total))
        for f in flat.values()
    ]
    stats.sort(key=lambda s: (-s.self_us, s.name))
    tree = [_freeze(c, n, strings.__getitem__) for c in roots.children.values()]
    return {"ops": stats, "tree": tree}


def _freeze(node: _Node, n: int, text: Any) -> OpNode:
    return OpNode(name=text(node.name), per_forward=node.count / n, total_us=math.fsum(node.total),
                  self_us=math.fsum(node.self_),
                  children=[_freeze(c, n, text) for c in node.children.values()])
