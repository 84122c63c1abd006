"""The views of a limits search (kind ``limits``): the largest size of a field each
variant fits within a memory budget, measured, with the textbook estimate beside it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.limits import LimitsRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: LimitsRecord, console: Console, top: int) -> None:
    """The ceilings table, with the threads the runs measured on."""
    from attnprof.formatting import threads_text
    from attnprof.render.limits_table import render_limits

    env = record.environment
    render_limits(record.ceilings, record.base, console,
                  threads=threads_text(env.threads, env.cpus))


def section(record: LimitsRecord, anchor: str) -> Section:
    """The base workload and budget; one row per variant and mode."""
    from attnprof.formatting import fmt_ms, format_bytes
    from attnprof.render.html.page import Section, Table, cell, num
    from attnprof.render.html.sections import environment_facts

    section = Section(kind="limits", title=f"attnprof limits — largest {record.field} within "
                      f"{format_bytes(record.budget_bytes)}", anchor=anchor)
    section.facts += [("base workload", record.base.describe()),
                      ("budget", format_bytes(record.budget_bytes))]
    section.facts += environment_facts(record.environment)
    table = Table(name=f"{anchor}-ceilings", caption="measured on real runs, each in a fresh "
                  "worker; the textbook estimate beside it",
                  columns=["variant", "mode", f"largest {record.field}",
                           "first that did not fit", "confirmed run", "textbook estimate",
                           "estimate ÷ measured", "runs"])
    for c in record.ceilings:
        fail = c.first_failure
        confirmed = c.confirmed
        lat = confirmed.latency_ms if confirmed else None
        table.rows.append([
            cell(c.variant), cell(c.mode),
            num(c.largest, None if c.largest is None else
                (f"≥ {c.largest}" if fail is None else str(c.largest))),
            cell((c.unsupported and f"unsupported: {c.unsupported}") or
                 (f"{fail.size}: {fail.status} — {fail.reason}" if fail else
                  f"none up to {c.search[1]}")),
            cell(f"{fmt_ms(lat.median if lat else None)} ms, peak "
                 f"{format_bytes(confirmed.peak_memory_bytes)}" if confirmed else "—"),
            num(c.analytic), num(c.analytic_ratio, None if c.analytic_ratio is None
                                 else f"{c.analytic_ratio:.2f}×"),
            num(len(c.probes))])
        table.row_css.append("row-unsupported" if c.unsupported else
                             "row-ok" if c.largest else "row-oom")
    section.tables.append(table)
    return section


def figures(record: LimitsRecord) -> list[Figure]:
    """Each variant's largest size, measured and estimated."""
    from attnprof.render.figures.limits import limits_figures

    return limits_figures(record)


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The one limits figure."""
    return ["limits"]


VIEW = View(kind="limits", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
