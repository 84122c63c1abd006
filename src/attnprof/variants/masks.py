"""Attention masks shared by the variants and the float64 reference.

Queries are aligned to the *end* of the keys: query ``i`` sits at key position
``i + k_len - q_len``. For the square prefill case that is ordinary causal masking; for a
decode query it means "sees the whole cache".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from attnprof.spec.workload import Workload

if TYPE_CHECKING:
    import torch

#: flex_attention's ``mask_mod(b, h, q_idx, kv_idx) -> allowed``, on index tensors.
MaskMod = Callable[["torch.Tensor", "torch.Tensor", "torch.Tensor", "torch.Tensor"], "torch.Tensor"]


def allowed_mask(q_len: int, k_len: int, causal: bool, window: int | None,
                 device: str | torch.device = "cpu", rows: range | None = None
                 ) -> torch.Tensor | None:
    """Boolean [q_len, k_len] mask, True where a query may attend; ``None`` when all may.
    ``rows`` (a range of query indices) gives only those rows: [len(rows), k_len]."""
    import torch

    if not causal and window is None:
        return None
    rows = rows if rows is not None else range(q_len)
    pos = torch.arange(rows.start, rows.stop, device=device).unsqueeze(1) + (k_len - q_len)
    key = torch.arange(k_len, device=device).unsqueeze(0)
    allowed = torch.ones(len(rows), k_len, dtype=torch.bool, device=device)
    if causal:
        allowed &= key <= pos
    if window is not None:
        allowed &= key > pos - window
        if not causal:
            allowed &= key < pos + window
    return allowed


def workload_mask(workload: Workload, window: int | None) -> torch.Tensor | None:
    """:func:`allowed_mask` for one measured call of ``workload``, on its device."""
    return allowed_mask(workload.q_len, workload.k_len, workload.is_causal, window,
                        workload.device)


def flex_mask_mod(q_len: int, k_len: int, causal: bool, window: int | None) -> MaskMod | None:
    """The same mask as :func:`allowed_mask`, as a flex_attention ``mask_mod`` (or ``None``)."""
    if not causal and window is None:
        return None
    offset = k_len - q_len

    def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                 kv_idx: torch.Tensor) -> torch.Tensor:  # flex's own signature
        pos = q_idx + offset
        ok = kv_idx <= pos if causal else kv_idx >= 0
        if window is not None:
            ok = ok & (kv_idx > pos - window)
            if not causal:
                ok = ok & (kv_idx < pos + window)
        return ok

    return mask_mod


def expand_kv(t: torch.Tensor, groups: int) -> torch.Tensor:
    """Repeat each K/V head ``groups`` times (the explicit GQA expansion; materialises)."""
    return t if groups == 1 else t.repeat_interleave(groups, dim=1)
