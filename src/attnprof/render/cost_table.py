"""The cost of a comparison's rows (a sweep's points, a model's phases) at the record's
price, under its table: per call (step) and per million tokens, the price and its source
beside them. Formats only: the figures come
from :mod:`attnprof.analysis.cost`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.analysis.cost import PHASE_TOKENS, phase_cost, row_cost, token_kind
from attnprof.record.compare import CompareRecord
from attnprof.record.model import ModelRecord
from attnprof.record.price import Price
from attnprof.record.sweep import SweepRecord
from attnprof.workload.prices import tokens_per_call

__all__ = ["render_costs", "render_model_costs", "render_sweep_costs"]


def render_costs(record: CompareRecord, console: Console) -> None:
    """Nothing when the record has no price."""
    price = record.price
    if price is None:
        return
    kind = token_kind(record.workload)
    table = Table(title="Cost at the machine's price",
                  caption=_caption(price, f"{kind}, {tokens_per_call(record.workload):,} "
                                          "per call"),
                  caption_justify="left")
    table.add_column("variant")
    table.add_column("$ per call", justify="right")
    table.add_column(f"$ per 1M {kind} tokens", justify="right")
    for row in record.results:
        cost = row_cost(row, record.workload, price.usd_per_hour)
        if cost is None:
            table.add_row(row.variant, f"— ({row.status})", "—")
        else:
            table.add_row(row.variant, f"{cost.usd_per_call:.3g}",
                          f"{cost.usd_per_million_tokens:.4g}")
    console.print(table)


def _caption(price: Price, tokens: str) -> Text:
    return Text(f"price: ${price.usd_per_hour:g}/hour ({price.source}); tokens: {tokens}; "
                "cost = price × median latency", overflow="fold")


def render_sweep_costs(record: SweepRecord, console: Console) -> None:
    """Each point's rows at the record's price; nothing when it has none."""
    price = record.price
    if price is None:
        return
    kind = token_kind(record.base)
    table = Table(title="Cost at the machine's price, per point",
                  caption=_caption(price, f"{kind}, batch × query length per call"),
                  caption_justify="left")
    for name in ("#", "point", "variant", "$ per call", f"$ per 1M {kind} tokens"):
        table.add_column(name, justify="right" if name.startswith(("#", "$")) else "left")
    for point in record.ordered_points():
        coords = " ".join(f"{k}={v}" for k, v in point.coords.items())
        for row in point.results:
            cost = row_cost(row, point.workload, price.usd_per_hour)
            table.add_row(str(point.index), coords, row.variant,
                          f"{cost.usd_per_call:.3g}" if cost else f"— ({row.status})",
                          f"{cost.usd_per_million_tokens:.4g}" if cost else "—")
    console.print(table)


def render_model_costs(record: ModelRecord, console: Console) -> None:
    """Each implementation's phases at the record's price; nothing when it has none."""
    price = record.price
    if price is None:
        return
    table = Table(title="Cost at the machine's price, per phase",
                  caption=_caption(price, "prefill: the batch's prompt tokens a step; "
                                          "decode: one new token per sequence a step; "
                                          "trained: the batch's tokens a step"),
                  caption_justify="left")
    for name in ("implementation", "phase", "tokens / step", "$ per step",
                 "$ per 1M tokens"):
        table.add_column(name, justify="left" if name in ("implementation", "phase")
                         else "right")
    for run in record.runs:
        cost = phase_cost(run, price.usd_per_hour)
        table.add_row(run.implementation, PHASE_TOKENS.get(run.phase, run.phase),
                      f"{run.tokens_per_step:,}" if run.tokens_per_step else "—",
                      f"{cost.usd_per_call:.3g}" if cost else f"— ({run.status})",
                      f"{cost.usd_per_million_tokens:.4g}" if cost else "—")
    console.print(table)
