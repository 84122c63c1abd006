"""Hand-written attention: the five primitive steps, out of place and in place.

scores = q·kᵀ, scale, mask, softmax, ·v. The out-of-place ``masked_fill`` allocates a second
full score tensor (a copy the code does not show); ``masked_fill_`` writes into the scores
instead. The mask is built once per workload, as a model would register it as a buffer.
With grouped K/V heads both expand K/V to every query head first.
"""

from __future__ import annotations

import math

from attnprof.variants.base import Built, Variant
from attnprof.variants.masks import build_mask, expand_kv, mask_window
from attnprof.workload.problem import Workload


def _build(workload: Workload, inplace: bool) -> Built:
    import torch

    scale = 1.0 / math.sqrt(workload.head_dim)
    mask = build_mask(workload, mask_window(workload))
    blocked = None if mask.allowed is None else ~mask.allowed
    bias = None if mask.bias is None else mask.bias.to(getattr(torch, workload.dtype))
    groups = workload.groups

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = expand_kv(k, groups), expand_kv(v, groups)
        scores = (q @ k.transpose(-2, -1)) * scale
        if bias is not None:
            scores = scores.add_(bias) if inplace else scores + bias
        if blocked is not None:
            if inplace:
                scores.masked_fill_(blocked, float("-inf"))
            else:
                scores = scores.masked_fill(blocked, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v

    notes = ("K/V expanded with repeat_interleave",) if groups > 1 else ()
    return Built(call=call, notes=notes)


NAIVE = Variant(
    name="naive",
    family="naive",
    summary="hand-written q·kᵀ, scale, out-of-place masked_fill, softmax, ·v",
    build=lambda workload: _build(workload, inplace=False),
    materializes_scores=True,
)

NAIVE_INPLACE = Variant(
    name="naive-inplace",
    family="naive",
    summary="hand-written attention with in-place masked_fill_ (no hidden score copy)",
    build=lambda workload: _build(workload, inplace=True),
    materializes_scores=True,
)
