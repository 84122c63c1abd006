"""``flex_attention`` with a block mask: compiled (fused) and eager (the warned slow path).

Compiled, flex generates one fused kernel and skips fully masked blocks. Without
``torch.compile`` it runs an unfused reference that materialises the full score matrix,
and PyTorch warns so; attnprof measures that path too, because it is a common mistake.
The block mask is built once per workload, outside the measured call.
"""

from __future__ import annotations

from attnprof.variants.base import SUPPORTED, Built, Support, Variant
from attnprof.variants.masks import (
    bias_score_mod,
    build_mask,
    flex_mask_mod,
    mask_window,
    tensor_mask_mod,
)
from attnprof.workload.problem import Workload


def _supports(workload: Workload) -> Support:
    try:
        import torch.nn.attention.flex_attention  # a probe: torch>=2.5 has it
    except ImportError:
        import torch

        return Support(False, f"flex_attention needs torch>=2.5; this is {torch.__version__}")
    return SUPPORTED


def _build(workload: Workload, compiled: bool, window: int | None = None) -> Built:
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    window = window if window is not None else mask_window(workload)
    batch = None
    score_mod = None
    if workload.plain_mask or workload.mask_kind == "window":
        mask_mod = flex_mask_mod(workload.q_len, workload.k_len, workload.is_causal, window)
    else:  # every other mask: a mask_mod over the mask tensor, a score_mod for a bias
        mask = build_mask(workload, window)
        mask_mod = None if mask.allowed is None else tensor_mask_mod(mask.allowed)
        if mask.allowed is not None and mask.allowed.shape[0] > 1:
            batch = workload.batch
        if mask.bias is not None:
            score_mod = bias_score_mod(mask.bias, getattr(torch, workload.dtype))
    block_mask = None
    if mask_mod is not None:
        block_mask = create_block_mask(mask_mod, B=batch, H=None, Q_LEN=workload.q_len,
                                       KV_LEN=workload.k_len, device=workload.device)
    fn = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    gqa = workload.groups > 1

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return fn(q, k, v, score_mod=score_mod, block_mask=block_mask, enable_gqa=gqa)

    notes = () if compiled else ("not compiled: materialises the full score matrix",)
    return Built(call=call, notes=notes)


FLEX = Variant(
    name="flex",
    family="flex",
    summary="torch.compile(flex_attention) with a block mask (one fused kernel)",
    build=lambda workload: _build(workload, compiled=True),
    supports=_supports,
    compiled=True,
)

FLEX_EAGER = Variant(
    name="flex-eager",
    family="flex",
    summary="flex_attention without torch.compile (unfused; materialises scores)",
    build=lambda workload: _build(workload, compiled=False),
    supports=_supports,
    materializes_scores=True,
)
