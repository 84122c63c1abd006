"""Hand-written attention, recognised by its shape in the op tree: the *inferred* attention.

Eager attention has no op that names it; it is five primitive steps written out::

    scores = q @ k.T   (aten::matmul / bmm / baddbmm / einsum)
    scores = scores * scale or / scale          optional
    scores = scores + mask, masked_fill, where  optional
    p = softmax(scores)                         (aten::softmax / _softmax / _safe_softmax)
    p = dropout(p), p.to(dtype)                 optional
    out = p @ v        (aten::matmul / bmm / einsum)

:func:`find_attention_patterns` starts at each softmax that is not inside a named attention
op or a backward node, and walks its *siblings* (the ops called by the same parent, in
time order) back to the nearest matmul-like op and forward to the next one. When the trace
recorded shapes, the two must fit: the scores matmul's output is the softmax's input (its
last two dims and its element count) and the value matmul's first input is the softmax's
shape — a loss's ``log_softmax`` or a router's softmax never passes. Without shapes the
order of names alone decides. Everything between the two matmuls, both included (the scale,
the mask built on the way, the dropout), is the pattern: one contiguous range of op
positions, since the subtrees of consecutive siblings are consecutive.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import is_in

__all__ = ["MATMUL_OPS", "SOFTMAX_OPS", "find_attention_patterns"]

SOFTMAX_OPS = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax",
                         "aten::special_softmax"})
MATMUL_OPS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum",
                        "aten::mm"})
#: Ops that end the walk without a match: another layer's work, never part of the core.
_STOPS = frozenset({"aten::linear", "aten::addmm", "aten::layer_norm", "aten::rms_norm",
                    "aten::embedding", "aten::log_softmax", "aten::cross_entropy_loss",
                    "aten::scaled_dot_product_attention", *SOFTMAX_OPS})
#: How many siblings the walk looks at on each side of the softmax (GPT-2's eager
#: attention has six between its scores matmul and its softmax).
_REACH = 16


def find_attention_patterns(ops: OpIndex, exclude: np.ndarray) -> list[tuple[int, int]]:
    """The op position ranges ``[lo, hi)`` of hand-written attention (see the module doc).

    ``exclude`` marks ops that cannot start a pattern (inside a named attention op or a
    backward node). Ranges come in position order and never overlap.
    """
    names = ops.names
    strings = ops.trace.events.strings
    ids = [i for i in (strings.id_of(n) for n in sorted(SOFTMAX_OPS)) if i >= 0]
    candidates = np.flatnonzero(is_in(ops.name, ids) & ~exclude & ~ops.annotation)
    found: list[tuple[int, int]] = []
    for s in candidates.tolist():
        parent = int(ops.parent[s])
        if parent >= 0 and names[parent] in SOFTMAX_OPS:
            continue  # aten::_softmax inside aten::softmax: the outer one decides
        if found and s < found[-1][1]:
            continue
        dims = _dims(ops, s, 0)
        scores = _walk(ops, s, parent, back=True, fits=lambda j, d=dims: _scores_fit(ops, j, d))
        if scores is None:
            continue
        value = _walk(ops, s, parent, back=False, fits=lambda j, d=dims: _value_fits(ops, j, d))
        if value is None:
            continue
        found.append((scores, int(ops.last[value]) + 1))
    return found


def _walk(ops: OpIndex, s: int, parent: int, *, back: bool, fits: Any) -> int | None:
    """The nearest matmul-like sibling of ``s`` on one side, if ``fits`` accepts it."""
    j = s
    for _ in range(_REACH):
        j = _previous(ops, j, parent) if back else _next(ops, j, parent)
        if j < 0:
            return None
        name = ops.names[j]
        if name in MATMUL_OPS:
            return j if fits(j) else None
        if name in _STOPS:
            return None
    return None


def _previous(ops: OpIndex, i: int, parent: int) -> int:
    """The sibling just before op ``i`` (same parent, same thread), else -1."""
    j = i - 1
    if j < 0 or j == parent or not _same_thread(ops, i, j):
        return -1
    while int(ops.parent[j]) != parent:
        j = int(ops.parent[j])
        if j < 0 or j == parent:
            return -1
    return j


def _next(ops: OpIndex, i: int, parent: int) -> int:
    """The sibling just after op ``i``, else -1."""
    j = int(ops.last[i]) + 1
    if j >= len(ops) or int(ops.parent[j]) != parent or not _same_thread(ops, i, j):
        return -1
    return j


def _same_thread(ops: OpIndex, i: int, j: int) -> bool:
    return bool(ops.pid[i] == ops.pid[j] and ops.tid[i] == ops.tid[j])


def _dims(ops: OpIndex, i: int, arg: int) -> list[int] | None:
    """Argument ``arg``'s dims as recorded (None: no shapes, or not a tensor)."""
    dims = ops.input_dims(i)
    if not dims or len(dims) <= arg:
        return None
    d = dims[arg]
    if not isinstance(d, list) or not d or not all(isinstance(x, int) for x in d):
        return None
    return d


def _scores_fit(ops: OpIndex, j: int, softmax: list[int] | None) -> bool:
    """Whether matmul ``j``'s output can be the softmax's input (True without shapes)."""
    if softmax is None or ops.names[j] == "aten::einsum":
        return True
    first = 1 if ops.names[j] == "aten::baddbmm" else 0
    a, b = _dims(ops, j, first), _dims(ops, j, first + 1)
    if a is None or b is None or len(a) < 2 or len(b) < 2 or len(softmax) < 2:
        return softmax is None
    out_rows, out_cols = a[-2], b[-1]
    batch = max(math.prod(a[:-2]), math.prod(b[:-2]))
    return ([out_rows, out_cols] == softmax[-2:]
            and batch * out_rows * out_cols == math.prod(softmax))


def _value_fits(ops: OpIndex, j: int, softmax: list[int] | None) -> bool:
    """Whether matmul ``j`` multiplies the probabilities (True without shapes)."""
    if softmax is None or ops.names[j] == "aten::einsum":
        return True
    a = _dims(ops, j, 0)
    return a is None or a == softmax
