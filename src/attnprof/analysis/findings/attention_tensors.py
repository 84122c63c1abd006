"""Attention's own tensors in a region: q, k, v, the scores and the output, by shape.

Rules that judge a copy by "is this a whole attention tensor" need these shapes. With the
workload known they follow from it. Without it (a foreign trace) they are read off the ops
that can only be attention: SDPA's inputs (q, k, v, and an output shaped like q with v's
head dim), and a ``q·kᵀ`` product ``[.., Sq, D] × [.., D, Sk]`` whose ``[.., Sq, Sk]``
result a softmax reads (q, kᵀ and the scores), with the ``[.., Sq, Sk] × [.., Sk, Dv]``
product that follows (v and the output). A region with none of these has no attention
tensors: rules that need them stay silent rather than guess.

A tensor *is* one of them when it holds the same elements in another layout: its dims are
the attention tensor's dims permuted and adjacent ones merged (``[B, S, H, D]`` and
``[B, S, H·D]`` are q's ``[B, H, S, D]``), which an equal element count alone would not
say (``[2, 8, 32, 64]`` has as many elements as ``[2, 2, 128, 64]`` and is neither).
"""

from __future__ import annotations

import functools
import itertools
import math

import msgspec

from attnprof.analysis.findings.context import SCORE_PRODUCTS, FindingContext
from attnprof.analysis.index.tensor_args import TensorArg, tensor_args
from attnprof.analysis.index.views import RegionView

__all__ = ["AttentionTensors", "attention_tensors"]

_SDPA_OPS = frozenset({
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
    "aten::_scaled_dot_product_attention_math",
})  # fmt: skip
_SOFTMAX = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax"})


class AttentionTensors(msgspec.Struct, frozen=True):
    """The shapes of a region's attention tensors, each with what it is."""

    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # (label, dims)

    def __bool__(self) -> bool:
        return bool(self.shapes)

    def what(self, arg: TensorArg) -> str | None:
        """What ``arg`` is (``"q"``, ``"k/v"``, ``"the scores"``, ``"the output"``, joined
        with ``" or "`` when shapes coincide), or ``None`` when it is none of them."""
        labels = [label for label, dims in self.shapes
                  if math.prod(dims) == arg.numel and _regroups(arg.dims, dims)]
        return " or ".join(dict.fromkeys(labels)) or None


def attention_tensors(ctx: FindingContext, view: RegionView) -> AttentionTensors:
    """The region's attention tensors, from the workload or from its ops (module doc).

    K/V expanded to every query head are not listed: they are the K/V rule's evidence."""
    workload = ctx.workload
    found: list[tuple[str, tuple[int, ...]]]
    if workload is not None:
        q = (workload.batch, workload.heads, workload.q_len, workload.head_dim)
        kv = (workload.batch, workload.num_kv_heads, workload.k_len, workload.head_dim)
        scores = (workload.batch, workload.heads, workload.q_len, workload.k_len)
        found = [("q", q), ("k/v", kv), ("the scores", scores), ("the output", q)]
    else:
        found = _from_ops(ctx, view)
    return AttentionTensors(tuple(dict.fromkeys(
        (label, dims) for label, dims in found if math.prod(dims) > 1)))


def _from_ops(ctx: FindingContext, view: RegionView) -> list[tuple[str, tuple[int, ...]]]:
    found: list[tuple[str, tuple[int, ...]]] = []
    for i in ctx.ops_named(view, _SDPA_OPS):
        args = tensor_args(ctx.ops, i)
        if len(args) >= 3 and all(len(a.dims) >= 3 for a in args[:3]):
            q, k, v = args[:3]
            found += [("q", q.dims), ("k/v", k.dims), ("k/v", v.dims),
                      ("the output", (*q.dims[:-1], v.dims[-1]))]
    scores: set[tuple[int, int]] = set()
    for i in ctx.ops_named(view, _SOFTMAX):
        read = tensor_args(ctx.ops, i)
        if read and len(read[0].dims) >= 3:
            scores.add((read[0].dims[-2], read[0].dims[-1]))
    for i in ctx.ops_named(view, SCORE_PRODUCTS):
        args = tensor_args(ctx.ops, i)
        if len(args) < 2 or len(args[0].dims) < 3 or len(args[1].dims) != len(args[0].dims):
            continue
        a, b = args[0], args[1]
        if a.dims[-1] != b.dims[-2]:
            continue
        batch = tuple(max(x, y) for x, y in zip(a.dims[:-2], b.dims[:-2], strict=True))
        if (a.dims[-2], b.dims[-1]) in scores:  # q·kᵀ: q, kᵀ, and the scores it writes
            found += [("q", a.dims), ("k/v", b.dims),
                      ("the scores", (*batch, a.dims[-2], b.dims[-1]))]
        elif (a.dims[-2], a.dims[-1]) in scores:  # p·v: v, and the output it writes
            found += [("k/v", b.dims), ("the output", (*batch, a.dims[-2], b.dims[-1]))]
    return found


@functools.lru_cache(maxsize=4096)
def _regroups(dims: tuple[int, ...], of: tuple[int, ...]) -> bool:
    """Whether ``dims`` are ``of`` permuted with some of them merged by multiplication.

    Brute force over which target dim each source dim joins: attention tensors have at most
    five dims, so at most 5**5 assignments (size-1 dims join nothing and are dropped).
    """
    target = sorted(d for d in dims if d != 1)
    source = [d for d in of if d != 1]
    if len(source) > 5 or len(target) > len(source):
        return False
    if not target:
        return not source
    for assign in itertools.product(range(len(target)), repeat=len(source)):
        products = [1] * len(target)
        for s, t in zip(source, assign, strict=True):
            products[t] *= s
        if sorted(products) == target:
            return True
    return False
