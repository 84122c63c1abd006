"""The attention time of a trace: the one definition ``analyze``, ``model``, ``diff`` and
the ranks view all report.

**Attention time** is the work of the attention core — scores, softmax and the weighted sum
of values, however they were written — in the forward *and* in the backward, per region
instance (a step, or a forward of an inference trace). The projections around it (q, k, v,
output) are not attention time; ``model`` books them to the attention *module*.

*Time* is, on a GPU trace, the device time of the kernels, copies and sets launched (a
kernel goes with the op that launched it); on a CPU trace, the *op time*: the durations of
the outermost attention ops (an attention op inside another counted one is not counted
again), against the instance's time inside ATen ops (its outermost ones) as the whole. So on
a CPU trace the attention time of SDPA is the duration of its ``aten::scaled_dot_product_
attention`` calls plus that of the autograd engine's ranges for their backward nodes, and
the share never passes 1.

What counts, op by op:

* **forward, by name**: everything inside a recognised attention op —
  ``aten::scaled_dot_product_attention`` and the backend op it routed to (flash, efficient,
  cuDNN, math, the CPU flash op), flex_attention — and, on a GPU, any fused-attention
  kernel (flash, memory-efficient, cuDNN, flex/Triton attention), which catches compiled
  graphs and CUDA graphs whose launching op says nothing.
* **backward, by name**: everything inside an attention backward op
  (``aten::_scaled_dot_product_flash_attention_for_cpu_backward``,
  ``aten::_scaled_dot_product_efficient_attention_backward``, ``aten::_flash_attention_
  backward``, cuDNN's, flex's) or its autograd node, and backward attention kernels.
* **backward, linked**: an autograd node (``autograd::engine::evaluate_function: X``) whose
  *sequence number* is that of a forward attention op — the link torch.profiler draws as
  its ``fwdbwd`` flow arrows. This is how the math backend's backward (``BmmBackward0``,
  ``SafeSoftmaxBackward0`` ...) is found: its nodes name primitives, not attention. The
  forward op of a sequence number is the last op to record it (the one that created the
  node, or an op inside it).
* **inferred**: hand-written attention found by its pattern
  (:mod:`~attnprof.analysis.passes.attention_pattern`: matmul → scale/mask → softmax →
  dropout → matmul) and the backward nodes linked to its ops. Marked ``pattern`` in
  ``found_by`` and reported apart in ``inferred_us``, with the ops counted.

Without sequence numbers (an old trace, or grad mode off) only the named backward counts.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec
import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import distinct, is_in, names_matching
from attnprof.analysis.index.views import RegionView
from attnprof.analysis.passes.attention_pattern import find_attention_patterns
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.attention_time import AttentionTime

__all__ = ["ATTENTION_OP", "BACKWARD_OP", "AttentionItems", "AttentionMarks", "StepAttention",
           "attention_items", "attention_marks", "attention_time", "summarize_attention"]

#: CPU ops that are attention, whatever ran below them (forward and backward names).
ATTENTION_OP = re.compile(
    r"^aten::_?scaled_dot_product|^aten::_(?:flash|efficient)_attention|FlexAttention"
    r"|flex_attention"
)
#: Attention backward ops and their autograd nodes.
BACKWARD_OP = re.compile(
    r"^aten::_scaled_dot_product_\w*_backward|^aten::_(?:flash|efficient)_attention_backward"
    r"|ScaledDotProduct\w*Backward|FlexAttentionBackward|flex_attention_backward"
)
#: The autograd engine's range around each backward node it runs.
AUTOGRAD_NODE = re.compile(r"^autograd::engine::evaluate_function: ")


class AttentionMarks(msgspec.Struct, frozen=True):
    """Per op position of an :class:`OpIndex`: which attention each op is part of."""

    forward_named: np.ndarray
    forward_inferred: np.ndarray
    backward_named: np.ndarray
    backward_inferred: np.ndarray
    #: Inside a backward node or attention backward op (a kernel launched there is backward).
    in_backward: np.ndarray
    #: The hand-written patterns found: op position ranges ``[lo, hi)``.
    patterns: list[tuple[int, int]] = msgspec.field(default_factory=list)


class StepAttention(msgspec.Struct, frozen=True):
    """One region instance's attention time (see the module doc), µs."""

    forward_us: float
    backward_us: float
    #: The part of forward + backward found by pattern.
    inferred_us: float
    #: The instance's whole work, on the same basis.
    work_us: float
    forward_ops: dict[str, int]
    backward_ops: dict[str, int]
    #: "name" and/or "pattern": how the counted ops were found.
    found_by: tuple[str, ...]

    @property
    def attention_us(self) -> float:
        """Forward + backward."""
        return self.forward_us + self.backward_us

    @property
    def share(self) -> float | None:
        """Of the instance's work, in [0, 1] (None: no work)."""
        if self.work_us <= 0:
            return None
        return min(max(self.attention_us / self.work_us, 0.0), 1.0)


def attention_marks(ops: OpIndex) -> AttentionMarks:
    """Every op's attention marks, computed once per index (kept in ``ops.cache``)."""
    if "attention_marks" not in ops.cache:
        ops.cache["attention_marks"] = _marks(ops)
    marks: AttentionMarks = ops.cache["attention_marks"]
    return marks


def _marks(ops: OpIndex) -> AttentionMarks:
    n = len(ops)
    if n == 0:
        empty = np.zeros(0, dtype=bool)
        return AttentionMarks(empty, empty, empty, empty, empty)
    in_backward = ops.inside(AUTOGRAD_NODE) | ops.inside(BACKWARD_OP)
    named = ops.inside(ATTENTION_OP) | ops.inside(BACKWARD_OP)
    forward_named = named & ~in_backward
    patterns = find_attention_patterns(ops, named | in_backward)
    pattern = np.zeros(n + 1, dtype=np.int64)
    for lo, hi in patterns:
        pattern[lo] += 1
        pattern[hi] -= 1
    forward_inferred = (np.cumsum(pattern[:-1]) > 0) & ~in_backward & ~named
    linked_named, linked_inferred = _linked_backward(ops, in_backward, forward_named,
                                                     forward_inferred)
    backward_named = (named & in_backward) | linked_named
    return AttentionMarks(forward_named=forward_named, forward_inferred=forward_inferred,
                          backward_named=backward_named,
                          backward_inferred=linked_inferred & ~backward_named,
                          in_backward=in_backward, patterns=patterns)


def _linked_backward(ops: OpIndex, in_backward: np.ndarray, *forward: np.ndarray
                     ) -> tuple[np.ndarray, ...]:
    """For each forward mark, the ops inside backward nodes whose sequence number is that
    of a marked forward op (see the module doc)."""
    n = len(ops)
    seq = ops.trace.events.sequence_number[ops.row]
    nodes = np.flatnonzero(names_matching(ops.name, ops.trace.events.strings.__getitem__,
                                          AUTOGRAD_NODE) & (seq >= 0))
    if not len(nodes):
        return tuple(np.zeros(n, dtype=bool) for _ in forward)
    # The forward op of each (pid, sequence number): the last to record it. Positions
    # ascend in time within a thread, so the last position of each group.
    fwd = np.flatnonzero((seq >= 0) & ~in_backward & ~ops.annotation)
    order = fwd[np.lexsort((fwd, seq[fwd], ops.pid[fwd]))]
    key_pid, key_seq = ops.pid[order], seq[order]
    last = np.r_[(key_pid[1:] != key_pid[:-1]) | (key_seq[1:] != key_seq[:-1]), True]
    creator = {(p, s): c for p, s, c in zip(key_pid[last].tolist(), key_seq[last].tolist(),
                                            order[last].tolist(), strict=True)}
    found = [creator.get((p, s), -1) for p, s in zip(ops.pid[nodes].tolist(),
                                                      seq[nodes].tolist(), strict=True)]
    out = []
    for mark in forward:
        hit = nodes[[c >= 0 and bool(mark[c]) for c in found]] if found else nodes[:0]
        out.append(ops.subtrees(hit))
    return tuple(out)


# Visit kinds, in the order a visit is classified.
_FWD_NAMED, _FWD_INFERRED, _BWD_NAMED, _BWD_INFERRED = 1, 2, 3, 4


class AttentionItems(msgspec.Struct, frozen=True):
    """A region's work items and its attention items, as the attention time counts them
    (see the module doc): the *whole* (a CPU trace's outermost ATen ops, a GPU trace's
    device events) and the attention among it (a CPU trace's outermost attention ops, a GPU
    trace's attention device events). Per item: its time (µs), the op it is or ran in (an
    :class:`OpIndex` position, -1: unknown), when it started (a device event: its launch),
    and the region instance it belongs to; attention items also have their kind
    (forward/backward, named/inferred) and name id. Other passes that cut a step (its
    phases) count attention from these, so every figure is the one definition's."""

    work_us: np.ndarray
    work_op: np.ndarray
    work_ts: np.ndarray
    work_instance: np.ndarray
    us: np.ndarray
    op: np.ndarray
    ts: np.ndarray
    instance: np.ndarray
    kind: np.ndarray
    name: np.ndarray


def attention_items(view: RegionView) -> AttentionItems:
    """``view``'s work and attention items (see :class:`AttentionItems`)."""
    marks = attention_marks(view.ops)
    return _device_visits(view, marks) if view.on_device else _op_visits(view, marks)


def attention_time(view: RegionView) -> list[StepAttention]:
    """The attention time of every instance of ``view``'s region, in order."""
    items = attention_items(view)
    n = view.n
    work = np.bincount(items.work_instance, weights=items.work_us, minlength=n)[:n]
    us, kind, names, instance = items.us, items.kind, items.name, items.instance
    strings = view.ops.trace.events.strings
    per = np.zeros((5, n), dtype=np.float64)
    for k in range(1, 5):
        mine = kind == k
        per[k] = np.bincount(instance[mine], weights=us[mine], minlength=n)[:n]
    counted: list[tuple[Counter[str], Counter[str], set[str]]] = [
        (Counter(), Counter(), set()) for _ in range(n)]
    for i, k, name in zip(instance.tolist(), kind.tolist(), names.tolist(), strict=True):
        fwd, bwd, how = counted[i]
        (fwd if k <= _FWD_INFERRED else bwd)[_label(strings[name])] += 1
        how.add("pattern" if k in (_FWD_INFERRED, _BWD_INFERRED) else "name")
    return [StepAttention(
        forward_us=float(per[_FWD_NAMED, i] + per[_FWD_INFERRED, i]),
        backward_us=float(per[_BWD_NAMED, i] + per[_BWD_INFERRED, i]),
        inferred_us=float(per[_FWD_INFERRED, i] + per[_BWD_INFERRED, i]),
        work_us=float(work[i]), forward_ops=dict(counted[i][0]),
        backward_ops=dict(counted[i][1]),
        found_by=tuple(h for h in ("name", "pattern") if h in counted[i][2]))
        for i in range(n)]


def _kind(marks: AttentionMarks, pos: np.ndarray) -> np.ndarray:
    return np.select([marks.backward_named[pos], marks.backward_inferred[pos],
                      marks.forward_named[pos], marks.forward_inferred[pos]],
                     [_BWD_NAMED, _BWD_INFERRED, _FWD_NAMED, _FWD_INFERRED], 0)


def _label(name: str) -> str:
    if name.startswith(_NODE_PREFIX):
        return name[len(_NODE_PREFIX):]  # the node's own name says what it differentiates
    return decode_kernel_name(name).short if len(name) > 80 else name


_NODE_PREFIX = "autograd::engine::evaluate_function: "


def _op_visits(view: RegionView, marks: AttentionMarks) -> AttentionItems:
    """A CPU trace's op time: per instance, its outermost ATen ops (the whole); and its
    outermost attention ops (each mark's outermost ATen op, never one inside another
    counted one)."""
    ops = view.ops
    pos = view.op_positions
    instance = view.visit_instance
    # ATen ops inside no other ATen op (annotations between don't count), as
    # :func:`attnprof.analysis.passes.outermost_cpu_ops` has them.
    outer = (~ops.annotation
             & ~ops.subtrees(np.flatnonzero(~ops.annotation), strict=True))[pos]
    whole = pos[outer]
    work = (ops.dur[whole].astype(np.float64), whole, ops.start[whole].astype(np.float64),
            instance[outer])
    if not len(ops):
        empty = np.zeros(0, dtype=np.int64)
        return AttentionItems(*work, empty.astype(np.float64), empty,
                              empty.astype(np.float64), empty, empty, empty)
    kind = _kind(marks, np.arange(len(ops), dtype=np.int64))
    marked = np.flatnonzero((kind > 0) & ~ops.annotation)
    head = np.zeros(len(ops), dtype=bool)
    head[marked] = True
    head &= ~ops.subtrees(marked, strict=True)
    at = np.flatnonzero(head[pos])
    chosen = pos[at]
    return AttentionItems(*work, ops.dur[chosen].astype(np.float64), chosen,
                          ops.start[chosen].astype(np.float64), instance[at], kind[chosen],
                          ops.name[chosen])


def _device_visits(view: RegionView, marks: AttentionMarks) -> AttentionItems:
    """A GPU trace's device time: per instance, all its device events' (the whole); and
    its attention events: their time, kind, name id and instance."""
    dev = view.devices
    at = view.device_visits
    us = (dev.end[at] - dev.start[at]).astype(np.float64)
    op = dev.op[at]
    launched = op >= 0
    safe = np.clip(op, 0, None)
    kind = np.zeros(len(at), dtype=np.int64)
    if len(view.ops):
        kind = np.where(launched, _kind(marks, safe), 0)
    # A fused-attention kernel is attention whatever launched it; its name or its launch
    # inside a backward node says which direction.
    names = dev.name[at]
    strings = view.ops.trace.events.strings
    backward_kernel = {}
    for i in distinct(names).tolist():
        decoded = decode_kernel_name(strings[i])
        if decoded.is_attention:
            backward_kernel[i] = decoded.direction == "backward"
    if backward_kernel:
        fused = np.array([backward_kernel.get(i) is not None for i in names.tolist()],
                         dtype=bool)
        bwd = np.array([bool(backward_kernel.get(i)) for i in names.tolist()], dtype=bool)
        if len(view.ops):
            bwd |= launched & marks.in_backward[safe]
        unnamed = fused & ~is_in(kind, [_FWD_NAMED, _BWD_NAMED])
        kind[unnamed] = np.where(bwd[unnamed], _BWD_NAMED, _FWD_NAMED)
    instance = view.device_instance
    ts = dev.where_ts[at].astype(np.float64)
    mine = np.flatnonzero(kind > 0)
    return AttentionItems(us, op, ts, instance, us[mine], op[mine], ts[mine], instance[mine],
                          kind[mine], names[mine])


def summarize_attention(steps: list[StepAttention], *, on_device: bool) -> AttentionTime:
    """The record of a region's attention time: per-instance means, and each instance's
    total (the region's instances weigh alike, as every per-forward figure does)."""
    n = len(steps) or 1
    forward = sum(s.forward_us for s in steps) / n
    backward = sum(s.backward_us for s in steps) / n
    work = sum(s.work_us for s in steps)
    fwd_ops: Counter[str] = Counter()
    bwd_ops: Counter[str] = Counter()
    for s in steps:
        fwd_ops.update(s.forward_ops)
        bwd_ops.update(s.backward_ops)
    attention = sum(s.attention_us for s in steps)
    return AttentionTime(
        per_step_us=forward + backward, forward_us=forward, backward_us=backward,
        inferred_us=sum(s.inferred_us for s in steps) / n,
        share=min(max(attention / work, 0.0), 1.0) if work > 0 else None,
        basis="device time" if on_device else "op time",
        found_by=[h for h in ("name", "pattern") if any(h in s.found_by for s in steps)],
        forward_ops={k: v / n for k, v in sorted(fwd_ops.items(), key=lambda kv: -kv[1])},
        backward_ops={k: v / n for k, v in sorted(bwd_ops.items(), key=lambda kv: -kv[1])},
        steps_us=[s.attention_us for s in steps])
