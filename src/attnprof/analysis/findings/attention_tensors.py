"""The sizes of attention's own tensors in a region: q, k, v, the scores and the output.

Rules that judge a copy or an op by "is this a whole attention tensor" need these sizes.
With the workload known they follow from it. Without it (a foreign trace) they are read off
the ops that can only be attention: SDPA's inputs (q, k, v, and an output shaped like q with
v's head dim), and a ``q·kᵀ`` product ``[.., Sq, D] × [.., D, Sk]`` whose ``[.., Sq, Sk]``
result a softmax reads (q, kᵀ and the scores), with the ``[.., Sq, Sk] × [.., Sk, Dv]``
product that follows (v and the output). A region with none of these has no attention
tensors: rules that need them stay silent rather than guess.
"""

from __future__ import annotations

import math

from attnprof.analysis.findings.context import FindingContext
from attnprof.analysis.index.tensor_args import TensorArg, tensor_args
from attnprof.analysis.index.views import RegionView

__all__ = ["attention_sizes"]

_SDPA_OPS = frozenset({
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_attention_math",
})  # fmt: skip
_PRODUCTS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm"})
_SOFTMAX = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})


def attention_sizes(ctx: FindingContext, view: RegionView) -> dict[int, str]:
    """Element count -> what holds that many elements (``"q"``, ``"k/v"``, ``"the scores"``,
    ``"the output"``, joined with ``" or "`` when two share a size); empty when unknown.

    K/V expanded to every query head are not listed: they are the K/V rule's evidence, and
    with ``Sq == Sk`` they are q's size anyway."""
    sizes: dict[int, list[str]] = {}

    def add(numel: int, label: str) -> None:
        if numel > 1 and label not in sizes.setdefault(numel, []):
            sizes[numel].append(label)

    w = ctx.workload
    if w is not None:
        add(w.batch * w.heads * w.q_len * w.head_dim, "q")
        add(w.batch * w.num_kv_heads * w.k_len * w.head_dim, "k/v")
        add(w.batch * w.heads * w.q_len * w.k_len, "the scores")
        add(w.batch * w.heads * w.q_len * w.head_dim, "the output")
    else:
        for label, numel in _from_ops(ctx, view):
            add(numel, label)
    return {n: " or ".join(labels) for n, labels in sizes.items()}


def _from_ops(ctx: FindingContext, view: RegionView) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for i in ctx.ops_named(view, _SDPA_OPS):
        args = tensor_args(ctx.ops, i)
        if len(args) >= 3 and all(len(a.dims) >= 3 for a in args[:3]):
            q, k, v = args[:3]
            found += [("q", q.numel), ("k/v", k.numel), ("k/v", v.numel),
                      ("the output", q.numel // q.dims[-1] * v.dims[-1])]
    scores = set()
    for i in ctx.ops_named(view, _SOFTMAX):
        read = tensor_args(ctx.ops, i)
        if read and len(read[0].dims) >= 3:
            scores.add(_key(read[0]))
    for i in ctx.ops_named(view, _PRODUCTS):
        args = tensor_args(ctx.ops, i)
        if len(args) < 2 or len(args[0].dims) < 3 or len(args[1].dims) != len(args[0].dims):
            continue
        a, b = args[0], args[1]
        if a.dims[-1] != b.dims[-2]:
            continue
        batch = math.prod(max(x, y) for x, y in zip(a.dims[:-2], b.dims[:-2], strict=True))
        if (a.dims[-2], b.dims[-1]) in scores:  # q·kᵀ: q, kᵀ, and the scores it writes
            found += [("q", a.numel), ("k/v", b.numel),
                      ("the scores", batch * a.dims[-2] * b.dims[-1])]
        elif (a.dims[-2], a.dims[-1]) in scores:  # p·v: v, and the output it writes
            found += [("k/v", b.numel), ("the output", batch * a.dims[-2] * b.dims[-1])]
    return found


def _key(arg: TensorArg) -> tuple[int, int]:
    return arg.dims[-2], arg.dims[-1]
