"""Terminal view of a recommendation: per shape, the choice, the runner-up, what decided
it, the measured points it rests on, and what a larger batch reaches."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import fmt_ms, format_bytes, one_line
from attnprof.noise import ALPHA
from attnprof.record.price import Price
from attnprof.record.recommendation import Constraints, Pick, Recommendation, StructureChoice

__all__ = ["render_recommendations", "render_structures"]


def render_recommendations(recs: list[Recommendation], constraints: Constraints,
                           console: Console, source: str, *, objective: str = "latency",
                           price: Price | None = None) -> None:
    """One row per shape, then each shape's excluded variants and batch headroom;
    ``objective``: what the picks were ranked by, ``price``: the price their costs are at."""
    ranked = ("; ranked by cost per million tokens, each candidate at the cheapest batch "
              "it was measured to run within the limits" if objective == "cost" else "")
    priced = (f"; price: ${price.usd_per_hour:g}/hour ({price.source}), cost = price × "
              "median latency / tokens" if price is not None else "")
    table = Table(title=f"attnprof recommend — {constraints.describe()}", title_justify="left",
                  caption=f"{source}; candidates: ran, within tolerance of the float64 "
                          f"reference, within the constraints{ranked}{priced}",
                  caption_justify="left")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("shape", overflow="fold", ratio=2)
    table.add_column("recommended", no_wrap=True)
    table.add_column("runner-up", no_wrap=True)
    table.add_column("decided by", overflow="fold", ratio=3)
    for r in recs:
        best = _pick(r.best) if r.best else Text("none", style="bold red")
        if r.tie:  # the measurement cannot choose: every tied variant, then "(tie)"
            best = Text(" or ".join(r.tie), style="bold yellow").append("\n(tie)", style="dim")
        table.add_row(str(r.point), Text(r.shape), best,
                      _pick(r.runner_up) if r.runner_up else Text("—"), Text(r.decided_by))
    console.print(table)
    for r in recs:
        lines = [Text(f"  {name}: {one_line(why, 200)}", style="dim")
                 for name, why in r.excluded.items()]
        if r.headroom and r.best is not None:
            lines += _headroom(r, constraints)
        if lines:
            console.print(Text(f"#{r.point}", style="bold"))
            for line in lines:
                console.print(line)


def _pick(p: Pick) -> Text:
    text = Text(p.variant, style="bold green")
    text.append(f"\n{fmt_ms(p.latency_ms)} ms · {format_bytes(p.peak_memory_bytes)}",
                style="dim")
    if p.usd_per_million_tokens is not None:
        text.append(f"\n${p.usd_per_million_tokens:.4g} / 1M tokens (batch {p.batch})",
                    style="dim")
    return text


def _headroom(r: Recommendation, constraints: Constraints) -> list[Text]:
    """The largest batch each candidate was measured to run within the memory limit and
    its throughput, when any of them is larger than the shape's own batch."""
    if all(h.batch <= r.batch for h in r.headroom):
        return []
    limit = format_bytes(constraints.max_memory_bytes)
    return [Text(f"  within {limit}, {h.variant} runs batch {h.batch} at "
                 f"{h.tokens_per_s:,.0f} tokens/s (measured"
                 + (")" if h.point == r.point else " in a run at that batch)"))
            for h in sorted(r.headroom, key=lambda h: -h.tokens_per_s)]


def render_structures(rows: list[StructureChoice], console: Console) -> None:
    """GQA or MHA: every head layout swept at a shape, side by side (no table when none)."""
    if not rows:
        return
    table = Table(title="head layouts side by side: GQA or MHA", title_justify="left",
                  caption="per layout, its recommended variant; KV cache: K and V bytes one "
                          "token keeps, per layer; vs fastest: that variant's samples against "
                          "the fastest layout's (Mann-Whitney U and the noise margin; the "
                          "points ran one after another, not interleaved)",
                  caption_justify="left")
    for name in ("shape", "layout", "heads", "KV heads", "head dim", "best variant", "ms",
                 "peak mem", "KV cache / token", "vs fastest"):
        right = name in ("heads", "KV heads", "head dim", "ms", "peak mem", "KV cache / token")
        table.add_column(name, justify="right" if right else "left", overflow="fold")
    for r in rows:
        table.add_row(Text(r.group or "—"), r.structure, str(r.heads), str(r.kv_heads),
                      str(r.head_dim), Text(r.variant or "none"),
                      fmt_ms(r.latency_ms) if r.latency_ms is not None else "—",
                      format_bytes(r.peak_memory_bytes),
                      format_bytes(r.kv_cache_bytes_per_token), _verdict(r))
    console.print(table)


def _verdict(r: StructureChoice) -> Text:
    if r.verdict is None:
        return Text("—")
    if r.verdict == "fastest":
        return Text("fastest", style="bold green")
    p = f" (p={r.p_value:.2g})" if r.p_value is not None else ""
    if r.verdict == "tie" and r.p_value is not None and r.p_value <= ALPHA:
        p = f" (p={r.p_value:.2g}; within the noise margin)"
    return Text(f"{r.verdict}{p}", style="yellow" if r.verdict == "tie" else "")
