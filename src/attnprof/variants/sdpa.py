"""``F.scaled_dot_product_attention``: automatic dispatch and each backend pinned.

Which backend SDPA picks is invisible at the call site. Pinning one with
``torch.nn.attention.sdpa_kernel`` makes SDPA refuse (``RuntimeError``) when that backend
cannot take the inputs; on CUDA PyTorch explains itself only in warnings, which the runner
captures and :func:`attnprof.knowledge.sdpa_backends.sdpa_refusal` turns into the row's
reason. On CPU PyTorch says nothing, so the reason states what the backend needs.

On CUDA the warnings come in sections, one per fused backend, each a header warning
(``"Flash attention kernel not used because:"``) followed by one warning per failed check;
with a backend pinned, the other backends' sections only say they were runtime disabled.
Only the pinned backend's own checks explain the refusal
(:func:`attnprof.knowledge.sdpa_backends.refusal_reasons`).
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, TypedDict

from attnprof.knowledge.sdpa_backends import sdpa_refusal
from attnprof.variants.base import Built, Variant
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch


class _SdpaKwargs(TypedDict, total=False):
    is_causal: bool
    enable_gqa: bool  # passed only when K/V heads are grouped
    attn_mask: torch.Tensor  # passed only for a mask other than none or plain causal


def sdpa_kwargs(workload: Workload, window: int | None = None) -> _SdpaKwargs:
    """SDPA's keywords for ``workload``: ``is_causal`` for no mask or plain causal, else
    the mask as ``attn_mask`` (boolean, or float for a bias), built once here."""
    import torch

    from attnprof.variants.masks import build_mask

    kwargs: _SdpaKwargs = {"is_causal": workload.is_causal}
    if not workload.plain_mask or window is not None:
        mask = build_mask(workload, window).sdpa_mask(getattr(torch, workload.dtype))
        kwargs["is_causal"] = False
        if mask is not None:
            kwargs["attn_mask"] = mask
    if workload.groups > 1:
        kwargs["enable_gqa"] = True
    return kwargs


#: variant name -> SDPBackend member name
PINNED: dict[str, str] = {
    "sdpa-math": "MATH",
    "sdpa-flash": "FLASH_ATTENTION",
    "sdpa-efficient": "EFFICIENT_ATTENTION",
    "sdpa-cudnn": "CUDNN_ATTENTION",
}


def _build(workload: Workload, backend: str | None) -> Built:
    import torch.nn.functional as F

    from attnprof.variants.masks import mask_window

    kwargs = sdpa_kwargs(workload, mask_window(workload))

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=workload.dropout, **kwargs)

    if backend is None:
        return Built(call=call)
    return Built(call=call, context=functools.partial(_pin, backend))


def _pin(backend: str) -> contextlib.AbstractContextManager[None]:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(getattr(SDPBackend, backend))


def _explain_refusal(backend: str, exc: BaseException, warnings: list[str],
                     workload: Workload) -> str | None:
    return sdpa_refusal(backend, exc, warnings, workload.device_type)


SDPA = Variant(
    name="sdpa",
    family="sdpa",
    summary="F.scaled_dot_product_attention, backend chosen by PyTorch",
    build=lambda workload: _build(workload, None),
    takes_dropout=True,
)


def _pinned(name: str, backend: str) -> Variant:
    return Variant(
        name=name,
        family="sdpa",
        summary=f"SDPA pinned to SDPBackend.{backend} with sdpa_kernel",
        build=functools.partial(_build, backend=backend),
        explain_refusal=functools.partial(_explain_refusal, backend),
        materializes_scores=backend == "MATH",
        takes_dropout=True,
    )


SDPA_PINNED: tuple[Variant, ...] = tuple(_pinned(n, b) for n, b in PINNED.items())
