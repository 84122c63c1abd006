"""Sliding-window (local) attention through SDPA with an explicit band mask.

Each query sees the ``window`` keys ending at its own position (both sides when not
causal). An explicit boolean mask is how most model code writes this; it keeps SDPA off the
flash backend (which takes no arbitrary mask), a cost the comparison makes visible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnprof.variants.base import SUPPORTED, Built, Support, Variant
from attnprof.variants.masks import workload_mask
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch


def _supports(workload: Workload) -> Support:
    if workload.mask_kind in ("none", "causal", "window"):
        return SUPPORTED
    return Support(False, f"sliding-window applies its own band mask and takes no --mask "
                          f"{workload.mask_kind}; use --mask window (or causal/none) with it, "
                          "or sdpa for this mask")


def _build(workload: Workload) -> Built:
    import torch.nn.functional as F

    mask = workload_mask(workload, workload.window)
    gqa = workload.groups > 1

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)

    notes = (f"window {workload.window}",)
    return Built(call=call, notes=notes)


SLIDING_WINDOW = Variant(
    name="sliding-window",
    family="sliding-window",
    summary="SDPA with a boolean band mask of --window keys",
    build=_build,
    supports=_supports,
    windowed=True,
)
