"""What every attention variant is: a named factory with one call signature.

A :class:`Variant` is registry data. Its ``build(workload)`` returns a :class:`Built`
whose ``call(q, k, v)`` takes q as [batch, heads, q_len, head_dim] and k, v as
[batch, kv_heads, k_len, head_dim] (the workload's dtype and device) and returns the attention
output shaped like q. Masking (causal, sliding window) and grouping are decided at build time
from the workload, so the measured call is only the attention itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

AttentionCall = Callable[["torch.Tensor", "torch.Tensor", "torch.Tensor"], "torch.Tensor"]


@dataclass(frozen=True)
class Support:
    """Whether a variant can run a workload, and if not, why (said to the user verbatim)."""

    ok: bool
    reason: str = ""


SUPPORTED = Support(True)


@dataclass
class Built:
    """A variant made ready for one workload.

    ``context`` is entered once around every batch of calls (e.g. ``sdpa_kernel`` pinning a
    backend), so it costs nothing per call. ``notes`` are facts the user should see next to
    the numbers (e.g. "K/V expanded before the module").
    """

    call: AttentionCall
    context: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext
    notes: tuple[str, ...] = ()


def _always(_: Workload) -> Support:
    return SUPPORTED


def _no_explanation(_exc: BaseException, _warnings: list[str], _workload: Workload) -> str | None:
    return None


@dataclass(frozen=True)
class Variant:
    """A registered attention variant.

    ``supports`` answers before anything runs; ``explain_refusal`` turns an exception raised
    by the first call (with the warnings PyTorch emitted during it) into an "unsupported"
    reason when the failure is a refusal rather than a bug (e.g. SDPA finding no kernel for
    a pinned backend). ``windowed`` variants compute the sliding-window mask, which changes
    both their reference output and their FLOP count. ``compiled`` variants report their
    first call as compile time, never as latency. ``materializes_scores`` variants hold
    full B·H·Sq·Sk score tensors, so the runner will not start them when those cannot fit.
    """

    name: str
    family: str
    summary: str
    build: Callable[[Workload], Built]
    supports: Callable[[Workload], Support] = _always
    explain_refusal: Callable[[BaseException, list[str], Workload], str | None] = _no_explanation
    windowed: bool = False
    compiled: bool = False
    materializes_scores: bool = False
    #: Passes the workload's ``dropout`` to its kernel (others refuse a dropout workload).
    takes_dropout: bool = False
    tags: tuple[str, ...] = field(default=())

    def window(self, workload: Workload) -> int | None:
        """The window this variant masks with on ``workload`` (``None`` = no window):
        its own (``windowed``), or the workload's ``--mask window``."""
        return workload.window if self.windowed or workload.mask_kind == "window" else None
