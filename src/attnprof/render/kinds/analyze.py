"""The views of an analysis (kind ``analyze``): one trace report per trace read, and the
files skipped. ``attnprof analyze`` loads this module on its path, so everything but the
terminal's trace report is imported when used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.text import Text

from attnprof.render.kinds import View
from attnprof.render.trace_report import render_trace_report

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.analyze import AnalyzeRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: AnalyzeRecord, console: Console, top: int) -> None:
    """Each trace's report (``top`` rows a table), then each file skipped and why."""
    for report in record.reports:
        render_trace_report(report, console, top=top)
    for bad in record.unreadable:
        line = Text(f"skipped {bad.source}", style="yellow")
        console.print(line.append(f": {bad.reason}", style=""))


def section(record: AnalyzeRecord, anchor: str) -> Section:
    """One part per trace, their findings gathered, and the files skipped."""
    from attnprof.formatting import counted
    from attnprof.render.html.page import Section
    from attnprof.render.html.trace import trace_section

    section = Section(kind="analyze", title=f"attnprof analyze — "
                      f"{counted(len(record.reports), 'trace')}", anchor=anchor)
    for i, report in enumerate(record.reports):
        part = trace_section(report, title=report.source, anchor=f"{anchor}-t{i}")
        section.parts.append(part)
        section.findings += part.findings
    section.notes += [f"skipped {bad.source}: {bad.reason}" for bad in record.unreadable]
    return section


def figures(record: AnalyzeRecord) -> list[Figure]:
    """Each trace's categories and timeline, named ``trace1-...``, ``trace2-...``."""
    from attnprof.render.figures.trace import trace_figures

    made = []
    for i, report in enumerate(record.reports):
        made += trace_figures(report, prefix=f"trace{i + 1}")
    return made


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """Each trace's figures; and a rank set's, since ``attnprof analyze`` of one run's
    ranks makes a ``ranks`` record, which it cannot know before reading the traces."""
    from attnprof.render.figures.base import TRACE_FIGURES
    from attnprof.render.kinds.ranks import figure_names as ranks_names

    return [*ranks_names(variants, traces),
            *(f"trace{i + 1}-{part}" for i in range(traces) for part in TRACE_FIGURES)]


VIEW = View(kind="analyze", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
