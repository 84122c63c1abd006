"""The views of a profile (kind ``profile``): a comparison whose every variant was traced.
The terminal shows each variant's whole trace report under the table; the HTML section
and the figures are the comparison's (:mod:`.compare`), which already hold each trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnprof.render.kinds import View
from attnprof.render.kinds.compare import figure_names, figures, section

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.compare import ProfileRecord

__all__ = ["VIEW", "terminal"]


def terminal(record: ProfileRecord, console: Console, top: int) -> None:
    """The comparison table, then each variant's trace report (``top`` rows a table), or
    why it has none."""
    from rich.text import Text

    from attnprof.render.compare_table import render_compare
    from attnprof.render.trace_report import render_trace_report

    render_compare(record, console)
    for row in record.results:
        if row.analysis is not None:
            console.rule(Text(row.variant, style="bold"))
            render_trace_report(row.analysis, console, top=top)
        elif row.status != "ok":
            line = Text(f"{row.variant}: {row.status}", style="yellow")
            console.print(line.append(f" — {row.reason}", style=""))


VIEW = View(kind="profile", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
