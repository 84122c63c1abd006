"""What a measured row costs at a price: per call and per million tokens.

Tokens are what one measured call processes: in ``forward`` (inference prefill) and
``forward+backward`` (training: the tokens trained) the batch's full sequences
(``batch × seq``), in ``decode`` one new token per sequence (``batch``). Cost is the
machine's price for the call's median latency: the machine is rented whole, so an idle
accelerator beside a slow kernel costs the same per hour. Pure: figures in, figures out.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnprof.record.compare import VariantResult
from attnprof.record.model import PhaseRun
from attnprof.workload.prices import tokens_per_call, usd_per_call
from attnprof.workload.problem import Workload

__all__ = ["PHASE_TOKENS", "RowCost", "phase_cost", "row_cost", "token_kind"]


def token_kind(workload: Workload) -> str:
    """What the tokens are: ``prefill``, ``decode`` or ``trained``."""
    return {"forward": "prefill", "decode": "decode"}.get(workload.mode, "trained")


@dataclass(frozen=True)
class RowCost:
    """US dollars per call and per million tokens of one row."""

    usd_per_call: float
    usd_per_million_tokens: float


def row_cost(row: VariantResult, workload: Workload, usd_per_hour: float) -> RowCost | None:
    """The cost of ``row`` at ``usd_per_hour``; ``None`` unless it is ``ok`` and timed."""
    if row.status != "ok" or row.latency_ms is None:
        return None
    per_call = usd_per_call(usd_per_hour, row.latency_ms.median)
    return RowCost(per_call, per_call / tokens_per_call(workload) * 1e6)


#: What a model phase's tokens are (its ``tokens_per_step``: the batch's prompt tokens in
#: prefill, one new token per sequence in decode, the tokens trained in train).
PHASE_TOKENS = {"prefill": "prefill", "decode": "decode", "train": "trained"}


def phase_cost(run: PhaseRun, usd_per_hour: float) -> RowCost | None:
    """The cost of one model step of ``run`` and per million of its tokens; ``None``
    unless it is ``ok``, timed and counts its tokens."""
    if run.status != "ok" or run.latency_ms is None or not run.tokens_per_step:
        return None
    per_step = usd_per_call(usd_per_hour, run.latency_ms.median)
    return RowCost(per_step, per_step / run.tokens_per_step * 1e6)
