"""The views of a sweep (kind ``sweep``): every point and variant, the scaling fits and
crossovers, the budgets; scaling and points figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.sweep import SweepRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: SweepRecord, console: Console, top: int) -> None:
    """The points table with the scaling fits, then the budgets' verdict."""
    from attnprof.render.cost_table import render_sweep_costs
    from attnprof.render.sweep_table import render_sweep

    render_sweep(record, console)
    render_sweep_costs(record, console)
    if record.budgets is not None:
        from attnprof.render.budget_table import render_budgets

        render_budgets(record.budgets, console)


def section(record: SweepRecord, anchor: str) -> Section:
    """The grid and base workload; every point and variant; the fits; the crossovers as
    notes; the budgets."""
    from attnprof.formatting import format_bytes
    from attnprof.render.compare_table import row_notes
    from attnprof.render.html.page import Section, Table, cell, num
    from attnprof.render.html.sections import (
        add_budgets,
        environment_facts,
        error_cell,
        latency_cell,
        spread_cell,
        status_cell,
    )
    from attnprof.render.sweep_table import describe_fit

    swept = ", ".join(f"{a.field} {','.join(map(str, a.values))}" for a in record.grid.axes)
    section = Section(kind=record.kind, title=f"attnprof {record.kind} — {swept or 'one point'}"
                      f" × {', '.join(record.variants)}", anchor=anchor)
    section.facts += [("base workload", record.base.describe()),
                      ("points", f"{len(record.points)} of {record.grid.size()}"),
                      ("executor", record.executor), ("FLOPs", record.flops_convention)]
    section.facts += environment_facts(record.environment)
    points = Table(name=f"{anchor}-points", caption="every point and variant",
                   columns=["#", *record.grid.fields, "variant", "status", "median ms", "IQR",
                            "peak memory", "max error", "reason"])
    for p in [*record.ordered_points(), *record.batch_points]:
        for r in p.results:
            points.rows.append([num(p.index), *(cell(p.coords.get(f)) for f in
                                                 record.grid.fields),
                                cell(r.variant), status_cell(r.status), latency_cell(r),
                                spread_cell(r),
                                num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
                                error_cell(r), cell(row_notes(r) if r.status != "ok" else "")])
            points.row_css.append(f"row-{r.status}")
    section.tables.append(points)
    fits = Table(name=f"{anchor}-fits", caption="scaling fits: least squares on log-log axes, "
                 "95% interval of the exponent (Student's t)",
                 columns=["variant", "held fixed", "quantity", "fit", "exponent", "R²",
                          "points", "read with care"])
    for f in record.fits:
        fits.rows.append([cell(f.variant), cell(" ".join(f"{k}={v}" for k, v in
                                                         f.group.items()) or "—"),
                          cell(f.quantity), cell(describe_fit(f)),
                          num(f.exponent, f"{f.exponent:.2f}"),
                          num(f.r_squared, None if f.r_squared is None else f"{f.r_squared:.3f}"),
                          num(f.points), cell("; ".join(f.caveats))])
    section.tables.append(fits)
    section.notes += [f"{c.overtaker} overtakes {c.overtaken} in {c.quantity} at {c.field} ≈ "
                      f"{c.at:.0f}" + (f" (may be noise: {c.caveat})" if c.caveat else "")
                      for c in record.crossovers]
    add_budgets(section, record.budgets, anchor)
    return section


def figures(record: SweepRecord) -> list[Figure]:
    """Latency and memory against the swept field, with the fits; every point's latency."""
    from attnprof.render.figures.sweep import sweep_figures

    return sweep_figures(record)


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The sweep's three figures."""
    return ["scaling-latency", "scaling-memory", "points-latency"]


VIEW = View(kind="sweep", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
