"""The views of a recommendation (kind ``recommend``): the choice per shape and why; the
HTML section is the sweep's (:mod:`.sweep`) with the choices first, and the figures are
the sweep's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnprof.render.kinds import View
from attnprof.render.kinds import sweep as sweep_view

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.sweep import RecommendRecord
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "section", "terminal"]


def terminal(record: RecommendRecord, console: Console, top: int) -> None:
    """The recommendation per shape, then the structures compared."""
    from rich.text import Text

    from attnprof.render.recommend_table import render_recommendations, render_structures

    rec = record.recommendation
    if rec is None:  # a recommend record is made with one; an edited file may lack it
        console.print(Text("no recommendation in this record", style="yellow"))
        return
    render_recommendations(rec.recommendations, rec.constraints, console, rec.source,
                           objective=rec.objective, price=rec.price)
    render_structures(rec.structures, console)


def section(record: RecommendRecord, anchor: str) -> Section:
    """The sweep's section with the table of choices first."""
    from attnprof.render.html.page import Table, cell, num

    section = sweep_view.section(record, anchor)
    rec = record.recommendation
    if rec is None:
        return section
    table = Table(name=f"{anchor}-recommendations",
                  caption=f"recommended per shape — {rec.constraints.describe()} ({rec.source})"
                          + (f"; ranked by cost per million tokens at "
                             f"${rec.price.usd_per_hour:g}/hour ({rec.price.source})"
                             if rec.objective == "cost" and rec.price else ""),
                  columns=["#", "shape", "recommended", "runner-up", "tie", "decided by",
                           "not candidates"])
    for r in rec.recommendations:
        best = r.best.variant if r.best else "none"
        table.rows.append([num(r.point), cell(r.shape),
                           cell(best, "status-ok" if r.best else "status-error"),
                           cell(r.runner_up.variant if r.runner_up else "—"),
                           cell(" or ".join(r.tie) if r.tie else ""), cell(r.decided_by),
                           cell("; ".join(f"{k}: {v}" for k, v in r.excluded.items()))])
    section.tables.insert(0, table)
    return section


VIEW = View(kind="recommend", terminal=terminal, section=section,
            figures=sweep_view.figures, figure_names=sweep_view.figure_names)
