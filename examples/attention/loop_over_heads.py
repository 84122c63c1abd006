"""Hand-written attention that loops over heads: a per-head Python loop.

Each head runs its own q·kᵀ, scale, mask, softmax and ·v on ``[batch, seq, head_dim]``
slices, and the heads are stacked at the end. The result is right; the cost is H small
matmuls where one batched ``[batch, heads, seq, head_dim]`` matmul would do (on a GPU, H
times the kernel launches). ``attnprof profile examples/attention/loop_over_heads.py:attention``
reports it as ``looped-attention``; the fix is one batched call, e.g.
``F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, enable_gqa=enable_gqa)``.

Same signature as ``F.scaled_dot_product_attention``. Grouped K/V heads (``enable_gqa``)
are honoured by indexing the shared head, as SDPA does.
"""

from __future__ import annotations

import math

import torch


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              attn_mask: torch.Tensor | None = None, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:
    """softmax(q·kᵀ·scale + mask)·v, one head at a time."""
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads != heads and not enable_gqa:
        raise ValueError(f"{kv_heads} K/V heads for {heads} query heads needs enable_gqa=True")
    group = heads // kv_heads
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    blocked = None
    if is_causal:
        ones = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device)
        blocked = ~ones.tril()
    outs = []
    for h in range(heads):
        qh, kh, vh = q[:, h], k[:, h // group], v[:, h // group]
        scores = (qh @ kh.transpose(-2, -1)) * scale
        if blocked is not None:
            scores = scores.masked_fill(blocked, float("-inf"))
        if attn_mask is not None:
            scores = scores + attn_mask
        outs.append(torch.softmax(scores, dim=-1) @ vh)
    return torch.stack(outs, dim=1)
