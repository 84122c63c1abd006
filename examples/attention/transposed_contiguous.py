"""Hand-written attention that copies its inputs and output to change their layout.

A common port from ``[batch, seq, heads, head_dim]`` code: q, k and v are transposed to
``[batch, seq, heads, head_dim]`` and made contiguous "for the kernel", and the output is
transposed back and made contiguous again. Each ``.contiguous()`` of a transposed tensor is
a full copy (``aten::contiguous`` → ``aten::clone`` → ``aten::copy_``) every forward, and
none is needed: SDPA and matmul take the ``[batch, heads, seq, head_dim]`` views as they
are. ``attnprof profile examples/attention/transposed_contiguous.py:attention`` reports
them as ``layout-copy``.

Same signature as ``F.scaled_dot_product_attention``; grouped K/V heads are honoured.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              attn_mask: torch.Tensor | None = None, is_causal: bool = False,
              scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:
    """SDPA on copies of q, k, v in [batch, seq, heads, head_dim] order, back again."""
    # The layout round trip: [B, H, S, D] -> contiguous [B, S, H, D] -> transposed view.
    q = q.transpose(1, 2).contiguous().transpose(1, 2)
    k = k.transpose(1, 2).contiguous().transpose(1, 2)
    v = v.transpose(1, 2).contiguous().transpose(1, 2)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                         scale=scale, enable_gqa=enable_gqa)
    return out.transpose(1, 2).contiguous().transpose(1, 2)
