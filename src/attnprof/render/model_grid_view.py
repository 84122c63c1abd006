"""Terminal view of ``model`` over lists of sizes: one row per combination, implementation
and phase, with the rank or tie of each implementation within its combination."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import format_bytes
from attnprof.record.diff import ALPHA
from attnprof.record.model import ModelRecord
from attnprof.render.model_view import rank_text
from attnprof.render.styles import STATUS_STYLE

__all__ = ["render_model_grid"]


def render_model_grid(records: Sequence[ModelRecord], console: Console) -> None:
    """One table over every combination's runs, then how ranks were decided."""
    if not records:
        return
    first = records[0]
    table = Table(title=f"attnprof model — {first.spec.source or first.model.source}: "
                        f"{len(records)} size combinations", title_justify="left")
    for name in ("layers", "KV heads", "heads", "seq", "batch", "attention", "phase",
                 "status", "ms / step", "rank", "tokens/s", "peak mem", "notes"):
        right = name in ("layers", "KV heads", "heads", "seq", "batch", "ms / step",
                         "tokens/s", "peak mem")
        table.add_column(name, justify="right" if right else "left",
                         overflow="fold", no_wrap=name == "rank",
                         ratio=1 if name == "notes" else None)
    for record in records:
        s, m = record.spec, record.model
        sizes = [str(v) if v is not None else "—" for v in
                 (m.layers, m.kv_heads, m.heads, m.seq or s.seq, m.batch or s.batch)]
        for r in record.runs:
            lat = r.latency_ms
            table.add_row(*sizes, r.implementation, r.phase,
                          Text(r.status, style=STATUS_STYLE.get(r.status, "")),
                          f"{lat.median:.2f}" if lat else "—", rank_text(r),
                          f"{r.tokens_per_s:,.0f}" if r.tokens_per_s else "—",
                          format_bytes(r.peak_memory_bytes), Text(r.reason))
    console.print(table)
    console.print(f"[dim]rank: within each size combination, its implementations timed in "
                  "the same interleaved rounds, each against the fastest: ranked when the "
                  f"samples differ (Mann-Whitney U, p ≤ {ALPHA:g}) and the medians by more "
                  "than the noise (5%, or the samples' relative IQR when larger); tie (with "
                  "its p-value) otherwise. Different sizes are different models: their "
                  "latencies are shown side by side, not ranked. A grid's runs are not "
                  "stored; run one combination to keep its record.[/dim]")
