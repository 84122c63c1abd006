"""The cost of a comparison's rows at the record's price, under its table: per call and
per million tokens, the price and its source beside them. Formats only: the figures come
from :mod:`attnprof.analysis.cost`."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.analysis.cost import row_cost, token_kind
from attnprof.record.compare import CompareRecord
from attnprof.workload.prices import tokens_per_call

__all__ = ["render_costs"]


def render_costs(record: CompareRecord, console: Console) -> None:
    """Nothing when the record has no price."""
    price = record.price
    if price is None:
        return
    kind = token_kind(record.workload)
    table = Table(title="Cost at the machine's price",
                  caption=Text(f"price: ${price.usd_per_hour:g}/hour ({price.source}); "
                               f"tokens: {kind}, {tokens_per_call(record.workload):,} per "
                               "call; cost = price × median latency"),
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
