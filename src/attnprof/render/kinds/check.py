"""The views of a check (kind ``check``): expected against observed, one row each, with
its verdict; the trace checked, when the check read one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.check import CheckRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: CheckRecord, console: Console, top: int) -> None:
    """The expectations table and its verdict."""
    from attnprof.render.check_terminal import render_check

    render_check(record.rows, console, title=record.title, source=record.source,
                 region=record.region)


def section(record: CheckRecord, anchor: str) -> Section:
    """What was checked against what; the expectations table and its verdict; the trace
    checked as a part."""
    from attnprof.render.html.page import Section
    from attnprof.render.html.sections import check_table, environment_facts, verdict
    from attnprof.render.html.trace import trace_section

    section = Section(kind="check", title=f"attnprof check — {record.title or 'expectations'}",
                      anchor=anchor)
    section.facts += [("expectations", record.expectations), ("target", record.target),
                      ("checked", record.source), ("region", record.region)]
    if record.workload is not None:
        section.facts.append(("workload", record.workload.describe()))
    section.facts += environment_facts(record.environment)
    section.tables.append(check_table(f"{anchor}-rows", "expected against observed",
                                      record.rows))
    section.verdict = verdict(record.rows, "expectations")
    if record.report is not None:
        part = trace_section(record.report, title=f"the trace checked: {record.source}",
                             anchor=f"{anchor}-trace")
        section.parts.append(part)
        section.findings += part.findings
    return section


def figures(record: CheckRecord) -> list[Figure]:
    """The trace checked (its figures named ``check-...``), or the expectations drawn."""
    from attnprof.render.figures.trace import check_figure, trace_figures

    report = record.report
    return trace_figures(report, prefix="check") if report is not None else [
        check_figure(record)]


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The expectations' figure, or the trace checked's."""
    from attnprof.render.figures.base import TRACE_FIGURES

    return ["check", *(f"check-{part}" for part in TRACE_FIGURES)]


VIEW = View(kind="check", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
