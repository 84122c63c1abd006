"""Terminal view of a :class:`~attnprof.record.ranks.RanksRecord`: a distributed run's
ranks side by side, the straggler of each step, HTA's temporal breakdown on a GPU, the
cross-rank findings and what could not be judged.

Formats only: every number is a field of the record. With more ranks than a table can
show (``top`` × 4), the table keeps the ranks a reader needs — those a finding names,
those that could not be read, then the slowest steps — and says how many it left out.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import format_share, format_us
from attnprof.record.ranks import RanksRecord, RankSummary
from attnprof.render.trace_report import render_findings

__all__ = ["render_ranks"]


def render_ranks(record: RanksRecord, console: Console, top: int = 15) -> None:
    """Print the whole cross-rank view of ``record``."""
    console.print(_header(record))
    _rank_table(record, console, top)
    _straggler_table(record, console, top)
    _temporal_table(record, console, top)
    render_findings(record.findings, console)
    if record.notes:
        console.print("\n[bold]not judged, or judged with care[/bold]")
        for note in record.notes:
            console.print(Text(f"  • {note}"))


def _header(record: RanksRecord) -> Text:
    read = [r for r in record.ranks if r.error is None]
    of = f" of {record.world_size}" if record.world_size is not None else ""
    text = Text(f"{len(record.ranks)} ranks{of}", style="bold")
    backends = sorted({r.backend for r in read if r.backend})
    devices = sorted({r.device for r in read if r.device})
    parts = [", ".join(backends + devices)] if backends or devices else []
    workers = ("as the Ray cluster had room" if record.workers is None
               else f"{record.workers} at a time")
    parts.append(f"read by the {record.executor} executor, {workers}")
    if len(read) < len(record.ranks):
        parts.append(f"{len(record.ranks) - len(read)} unreadable")
    text.append("  " + " · ".join(parts), style="")
    return text


def _shown(record: RanksRecord, limit: int) -> list[RankSummary]:
    """Every rank when they fit; else the ranks findings name, the unreadable ones and
    the slowest, in rank order."""
    if len(record.ranks) <= limit:
        return record.ranks
    named = {r for f in record.findings for r in f.data.get("ranks", [])}
    named |= {f.data["rank"] for f in record.findings if "rank" in f.data}
    keep = [i for i, r in enumerate(record.ranks) if r.error is not None or r.rank in named]
    kept = set(keep)
    slowest = sorted((i for i, r in enumerate(record.ranks)
                      if i not in kept and r.step_us is not None),
                     key=lambda i: -(record.ranks[i].step_us or 0.0))
    keep += slowest[:max(limit - len(keep), 0)]
    return [record.ranks[i] for i in sorted(keep)]  # ranks are in rank order


def _rank_table(record: RanksRecord, console: Console, top: int) -> None:
    shown = _shown(record, max(top, 1) * 4)
    cpu = all(r.kernel_source == "cpu-ops" for r in record.ranks if r.error is None)
    table = Table(title="per rank, per step (mean over its steps; step: median)",
                  title_justify="left")
    for name in ("rank", "steps", "step", "compute", "in collectives",
                 "rest of CPU" if cpu else "idle", "attention", "share",
                 "compute ops" if cpu else "kernels", "SDPA backend"):
        table.add_column(name, justify="left" if name in ("rank", "SDPA backend") else "right")
    for r in shown:
        if r.error is not None:
            table.add_row(_rank(r), Text("unreadable (below)", style="red"), *[""] * 8)
            continue
        c = r.categories_us
        table.add_row(
            _rank(r), str(len(r.steps)), format_us(r.step_us), format_us(c.get("compute")),
            format_us(r.collective_us_per_step),
            format_us(c.get("framework" if cpu else "idle")),
            format_us(r.attention_us_per_step), format_share(r.attention_share, 1),
            f"{r.kernels_per_step:g}" if r.kernels_per_step is not None else "—",
            Text(r.sdpa_backend or "—"))
    console.print(table)
    if len(shown) < len(record.ranks):
        console.print(Text(f"  {len(record.ranks) - len(shown)} more ranks not shown (the "
                           "ranks findings name, the unreadable and the slowest are); all "
                           "are in --json and --csv", style="dim"))
    basis = ("CPU-only run: compute is the compute ops' work, in collectives the "
             "collectives' time on the process group's threads (mostly waiting for the "
             "other ranks), rest of CPU the step's other CPU time (Python, the dispatcher, "
             "the main thread blocked on a collective)" if cpu else
             "device time: compute kernels, communication kernels (in collectives: mostly "
             "waiting for the other ranks), idle inside the steps")
    console.print(Text(f"  {basis}; attention: the attention time per step, forward + "
                       "backward (SDPA, flex and fused-attention ops and kernels by name, "
                       "hand-written attention inferred from its pattern; device time, or "
                       "on CPU the time inside ATen ops)", style="dim"))
    for r in shown:
        if r.error is not None:
            console.print(Text(f"  rank {_rank(r)} unreadable: {r.error}", style="red"))
        for note in r.notes:
            console.print(Text(f"  rank {_rank(r)}: {note}", style="yellow"))


def _straggler_table(record: RanksRecord, console: Console, top: int) -> None:
    if not record.steps:
        return
    table = Table(title="the rank each step waited for (least time in collectives)",
                  title_justify="left")
    for name in ("step", "straggler", "its collectives", "others' (median)", "extra"):
        table.add_column(name, justify="right")
    for s in record.steps[:max(top, 1) * 2]:
        table.add_row(str(s.step), "none (noise)" if s.straggler is None
                      else f"rank {s.straggler}",
                      format_us(s.straggler_collective_us), format_us(s.others_collective_us),
                      format_us(s.extra_us))
    console.print(table)
    if len(record.steps) > max(top, 1) * 2:
        console.print(Text(f"  {len(record.steps) - max(top, 1) * 2} more steps in --json",
                           style="dim"))


def _temporal_table(record: RanksRecord, console: Console, top: int) -> None:
    shown = [r for r in _shown(record, max(top, 1) * 4) if r.temporal is not None]
    if not shown:
        return
    table = Table(title="temporal breakdown (Holistic Trace Analysis's definitions)",
                  title_justify="left")
    for name in ("rank", "span", "compute", "non-compute", "idle", "comm/comp overlap"):
        table.add_column(name, justify="left" if name == "rank" else "right")
    for r in shown:
        t = r.temporal
        assert t is not None
        span = t.span_us or 1.0
        table.add_row(_rank(r), format_us(t.span_us),
                      *(format_share(share, 1) for share in (
                          t.compute_us / span, t.non_compute_us / span, t.idle_us / span,
                          t.overlap)))
    console.print(table)
    windows = sorted({r.temporal.window for r in shown if r.temporal is not None})
    console.print(Text(f"  shares of the span; {'; '.join(windows)}; overlap: share of the "
                       "communication kernels' time with a compute kernel running",
                       style="dim"))


def _rank(r: RankSummary) -> Text:
    return Text(str(r.rank) if r.rank is not None else r.source)

