"""Attention masks shared by the variants and the float64 reference.

Queries are aligned to the *end* of the keys: query ``i`` sits at key position
``i + k_len - q_len``. For the square prefill case that is ordinary causal masking; for a
decode query it means "sees the whole cache".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attnprof.workload.problem import Workload

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


def mask_window(workload: Workload) -> int | None:
    """The window every variant applies on ``workload`` (``--mask window``), else ``None``."""
    return workload.window if workload.mask_kind == "window" else None


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


@dataclass
class MaskTensors:
    """A workload's mask as tensors, built once per workload (outside the timed call).

    ``allowed`` is boolean [B or 1, 1, q_len, k_len], True where a query may attend
    (``None``: every pair); ``bias`` is a float32 [1, heads, q_len, k_len] added to the
    scores (``None``: no bias). Definitions: :mod:`attnprof.workload.masking`.
    """

    allowed: torch.Tensor | None
    bias: torch.Tensor | None

    def sdpa_mask(self, dtype: torch.dtype) -> torch.Tensor | None:
        """SDPA's ``attn_mask``: the boolean mask, or, with a bias, the float bias in
        ``dtype`` with ``-inf`` where a pair is blocked."""
        if self.bias is None:
            return self.allowed
        bias = self.bias.to(dtype)
        if self.allowed is not None:
            bias = bias.masked_fill(~self.allowed, float("-inf"))
        return bias

    def keyless_rows(self) -> torch.Tensor | None:
        """Boolean [B or 1, 1, q_len, 1]: query rows that admit no key (``None``: none)."""
        if self.allowed is None:
            return None
        empty = ~self.allowed.any(dim=-1, keepdim=True)
        return empty if bool(empty.any()) else None


def build_mask(workload: Workload, window: int | None,
               device: str | torch.device | None = None) -> MaskTensors:
    """The mask of ``workload`` as a variant applying ``window`` sees it."""
    import torch

    device = workload.device if device is None else device
    kind, q_len, k_len = workload.mask_kind, workload.q_len, workload.k_len
    base = allowed_mask(q_len, k_len, workload.is_causal, window, device)
    allowed = None if base is None else base.view(1, 1, q_len, k_len)
    pos = torch.arange(q_len, device=device).view(-1, 1) + (k_len - q_len)
    key = torch.arange(k_len, device=device).view(1, -1)
    extra: torch.Tensor | None = None
    if kind == "padding":
        n = torch.tensor(workload.row_lengths(), device=device).view(-1, 1, 1, 1)
        extra = key.view(1, 1, 1, -1) < n
    elif kind == "document":
        ids = torch.tensor([[d for d, n in enumerate(docs) for _ in range(n)]
                            for docs in workload.documents()], device=device)
        extra = (ids[:, pos.view(-1)].unsqueeze(-1) == ids.unsqueeze(1)).unsqueeze(1)
    elif kind == "prefix":
        extra = ((key < workload.prefix_len) | (key <= pos)).view(1, 1, q_len, k_len)
    elif kind == "bool":
        gen = torch.Generator(device="cpu").manual_seed(workload.mask_seed)
        noise = torch.rand(workload.batch, 1, q_len, k_len, generator=gen)
        rank = noise.argsort(dim=-1).argsort(dim=-1)  # each key's place in a random order
        extra = (rank < round(workload.mask_density * k_len)).to(device)
    if extra is not None:
        allowed = extra if allowed is None else allowed & extra
    if allowed is not None:  # every mask [B or 1, 1, q_len, k_len], whatever it broadcast
        allowed = allowed.expand(allowed.shape[0], 1, q_len, k_len).contiguous()
    bias = None
    if kind == "bias":
        gen = torch.Generator(device="cpu").manual_seed(workload.mask_seed + 1)
        bias = torch.randn(1, workload.heads, q_len, k_len, generator=gen).to(device)
    elif kind == "alibi":
        h = workload.heads
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], device=device)
        bias = -slopes.view(1, h, 1, 1) * (pos - key).abs().to(torch.float32).view(
            1, 1, q_len, k_len)
    return MaskTensors(allowed=allowed, bias=bias)


def tensor_mask_mod(allowed: torch.Tensor) -> MaskMod:
    """A flex ``mask_mod`` reading a boolean [B or 1, 1, q, k] mask tensor."""
    per_batch = allowed.shape[0] > 1
    dense = allowed[:, 0]

    def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                 kv_idx: torch.Tensor) -> torch.Tensor:
        return dense[b if per_batch else 0, q_idx, kv_idx]

    return mask_mod


def bias_score_mod(bias: torch.Tensor, dtype: torch.dtype) -> Callable[..., torch.Tensor]:
    """A flex ``score_mod`` adding a float [1, heads, q, k] bias to every score: the bias
    rounded to the inputs' ``dtype`` (what SDPA and the reference receive), added in the
    scores' own dtype."""
    table = bias[0].to(dtype).to(bias.dtype)

    def score_mod(score: torch.Tensor, b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                  kv_idx: torch.Tensor) -> torch.Tensor:
        return score + table[h, q_idx, kv_idx].to(score.dtype)

    return score_mod
