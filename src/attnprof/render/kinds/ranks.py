"""The views of a rank set (kind ``ranks``: ``attnprof analyze`` of one distributed run's
traces): the ranks side by side, the straggler of each step, the cross-rank findings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.ranks import RanksRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: RanksRecord, console: Console, top: int) -> None:
    """The ranks side by side, the stragglers and the findings."""
    from attnprof.render.ranks_view import render_ranks

    render_ranks(record, console, top)


def section(record: RanksRecord, anchor: str) -> Section:
    """One row per rank, the straggler of each step, the cross-rank findings."""
    from attnprof.formatting import format_share, format_us
    from attnprof.render.html.page import Section, Table, cell, num

    section = Section(kind="ranks", title=f"attnprof analyze — {len(record.ranks)} ranks"
                      + (f" of {record.world_size}" if record.world_size else ""),
                      anchor=anchor)
    section.facts += [("executor", record.executor), ("workers", str(record.workers or "—"))]
    ranks = Table(name=f"{anchor}-ranks", caption="one row per rank",
                  columns=["rank", "trace", "device", "events", "kernels per step",
                           "CPU per step", "attention share", "SDPA backend", "error"])
    for r in record.ranks:
        ranks.rows.append([num(r.rank, None if r.rank is None else str(r.rank)), cell(r.source),
                           cell(r.device), num(r.events), num(r.kernels_per_step),
                           num(r.cpu_us_per_step, format_us(r.cpu_us_per_step)),
                           num(r.attention_share, format_share(r.attention_share)),
                           cell(r.sdpa_backend), cell(r.error or "", "status-error"
                                                       if r.error else "")])
        ranks.row_css.append("row-error" if r.error else "row-ok")
    section.tables.append(ranks)
    steps = Table(name=f"{anchor}-steps", caption="the straggler of each step: the rank the "
                  "others waited for in their collectives",
                  columns=["step", "straggler", "its collectives", "others' (median)",
                           "extra"])
    for s in record.steps:
        steps.rows.append([num(s.step), num(s.straggler),
                           num(s.straggler_collective_us, format_us(s.straggler_collective_us)),
                           num(s.others_collective_us, format_us(s.others_collective_us)),
                           num(s.extra_us, format_us(s.extra_us))])
    section.tables.append(steps)
    section.findings = [("ranks", f) for f in record.findings]
    section.notes += record.notes
    return section


def figures(record: RanksRecord) -> list[Figure]:
    """Time per category per rank, and each step's collective time per rank."""
    from attnprof.render.figures.family import ranks_figures

    return ranks_figures(record)


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The rank set's two figures."""
    return ["ranks-categories", "ranks-collectives"]


VIEW = View(kind="ranks", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
