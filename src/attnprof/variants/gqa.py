"""Grouped-query attention two ways: SDPA's native ``enable_gqa`` and explicit repeat_kv.

``repeat_kv`` (as in many Llama ports) copies every K/V head ``heads/kv_heads`` times before
attention: correct, but it materialises K/V at full head count. ``enable_gqa=True`` lets
SDPA index the shared heads instead (on backends that support it; others fall back to math).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnprof.variants.base import SUPPORTED, Built, Support, Variant
from attnprof.variants.masks import expand_kv, mask_window
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch


def _supports_native(workload: Workload) -> Support:
    import inspect

    import torch.nn.functional as F

    try:
        params = inspect.signature(F.scaled_dot_product_attention).parameters
    except (TypeError, ValueError):  # builtins without a signature: assume a new torch
        return SUPPORTED
    if "enable_gqa" not in params:
        return Support(False, "SDPA enable_gqa needs torch>=2.5; use gqa-repeat-kv")
    return SUPPORTED


def _notes(workload: Workload) -> tuple[str, ...]:
    if workload.groups == 1:
        return ("kv_heads == heads: nothing to group; set --kv-heads to compare GQA paths",)
    return ()


def _build_native(workload: Workload) -> Built:
    import torch.nn.functional as F

    from attnprof.variants.sdpa import sdpa_kwargs

    kwargs = sdpa_kwargs(workload, mask_window(workload))
    kwargs["enable_gqa"] = True

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    return Built(call=call, notes=_notes(workload))


def _build_repeat(workload: Workload) -> Built:
    import torch.nn.functional as F

    from attnprof.variants.sdpa import sdpa_kwargs

    kwargs = sdpa_kwargs(workload, mask_window(workload))
    kwargs.pop("enable_gqa", None)
    groups = workload.groups

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = expand_kv(k, groups), expand_kv(v, groups)
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    return Built(call=call, notes=_notes(workload))


GQA_NATIVE = Variant(
    name="gqa-native",
    family="gqa",
    summary="SDPA with enable_gqa=True (shared K/V heads indexed, not copied)",
    build=_build_native,
    supports=_supports_native,
)

GQA_REPEAT_KV = Variant(
    name="gqa-repeat-kv",
    family="gqa",
    summary="K/V expanded with repeat_interleave, then SDPA (materialises K/V)",
    build=_build_repeat,
)
