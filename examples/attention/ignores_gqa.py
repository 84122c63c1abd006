"""Hand-written attention that ignores ``enable_gqa``: it needs as many K/V heads as q heads.

On the default grouped-query workload (8 query heads sharing 2 K/V heads) its first matmul
fails with PyTorch's bare shape error; attnprof's row says what happened and what to do
(``--kv-heads`` equal to ``--heads``, or honour ``enable_gqa=True``).
"""

from __future__ import annotations

import math

import torch


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              attn_mask: torch.Tensor | None = None, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:
    """softmax(q·kᵀ·scale)·v for equal head counts only."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    if is_causal:
        blocked = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool,
                             device=q.device).triu(1)
        scores = scores.masked_fill(blocked, float("-inf"))
    if attn_mask is not None:
        scores = scores + attn_mask
    return torch.softmax(scores, dim=-1) @ v
