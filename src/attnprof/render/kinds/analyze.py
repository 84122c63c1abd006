"""The views of an analysis (kind ``analyze``): one trace report per trace read, and the
files skipped. ``attnprof analyze`` loads this module on its path, so everything but the
terminal's trace report is imported when used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
from rich.text import Text

from attnprof.render.kinds import View
from attnprof.render.safe import terminal_safe
from attnprof.render.trace_report import (
    head_of,
    render_trace_head,
    render_trace_report,
    render_trace_rest,
)

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.analyze import AnalyzeRecord
    from attnprof.record.trace_report import TraceReport
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section
    from attnprof.render.terminal import TerminalRenderer

__all__ = ["VIEW", "TwoPartDrawing", "figure_names", "figures", "section", "terminal"]


def terminal(record: AnalyzeRecord, console: Console, top: int) -> None:
    """Each trace's report (``top`` rows a table), then each file skipped and why."""
    for report in record.reports:
        render_trace_report(report, console, top=top)
    _skipped(record, console)


def _skipped(record: AnalyzeRecord, console: Console) -> None:
    for bad in record.unreadable:
        line = Text(f"skipped {bad.source}", style="yellow")
        console.print(line.append(f": {bad.reason}", style=""))


class TwoPartDrawing:
    """The terminal view of a one-trace analysis drawn in two parts: the report's header
    and region tables (:func:`~attnprof.render.trace_report.render_trace_head`) as soon as
    the analysis has them (:meth:`head`, given as ``on_head``), the rest when the record
    is done (:meth:`text`). ``attnprof analyze`` draws the first while its child process
    works out the findings (:mod:`attnprof.cli.analyze_cmd`).

    :meth:`text` is always ``renderer.render(record)``: the head drawn early is used only
    when the record's report still agrees with it on everything the head shows
    (:func:`~attnprof.render.trace_report.head_of`), else the whole view is drawn anew.
    """

    def __init__(self, renderer: TerminalRenderer) -> None:
        self.renderer = renderer
        self._head: tuple[bytes, str] | None = None

    def head(self, report: TraceReport) -> None:
        """Draw ``report``'s header and region tables now (only the first report's)."""
        if self._head is None:
            safe = terminal_safe(report)
            self._head = (head_of(report), self.renderer.draw(
                lambda console: render_trace_head(safe, console, self.renderer.top)))

    def text(self, record: AnalyzeRecord) -> str:
        """The whole view of ``record``, from the head drawn early where it still holds."""
        if (self._head is None or len(record.reports) != 1
                or head_of(record.reports[0]) != self._head[0]):
            return self.renderer.render(record)
        # Made safe without the regions, which the head showed (a third of the record).
        (report,) = record.reports
        safe = terminal_safe(msgspec.structs.replace(
            record, reports=[msgspec.structs.replace(report, regions=[])]))

        def rest(console: Console) -> None:
            render_trace_rest(safe.reports[0], console, self.renderer.top)
            _skipped(safe, console)

        return self._head[1] + self.renderer.draw(rest)


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
