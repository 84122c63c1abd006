"""The terminal: rich tables for people, one view per record kind.

``TerminalRenderer(width=..., color=..., top=...).render(record)`` returns the text (with
ANSI styles when ``color``); :meth:`TerminalRenderer.for_stdout` sizes it for wherever
stdout goes. A comparison is its table (and, when traced, one line of findings per
variant); a profile adds each variant's full trace report; an analysis is one report per
trace; a sweep is its points table with the scaling fits; a model is its summary, runs
and per-layer tables; a rank set is its ranks side by side, stragglers and findings; a
diff is its changes, rows and traces; a check its expectations; limits its ceilings; a
recommendation its choice per shape. A budgets verdict in a record follows its table. New
record kinds add a view to :data:`_VIEWS`; every view draws from the record after
:func:`~attnprof.render.safe.terminal_safe`, so none shows a raw control character.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable
from typing import Any, ClassVar

from rich.console import Console
from rich.text import Text

from attnprof.formatting import threads_text
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.budgets import BudgetReport
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.family import Record
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.recommend import RecommendRecord
from attnprof.record.sweep import SweepRecord
from attnprof.render.safe import terminal_safe
from attnprof.render.trace_report import render_trace_report

__all__ = ["TerminalRenderer", "make_console"]

#: Width when stdout is not a terminal (a file, a pipe): wide enough for every table.
PIPE_WIDTH = 160


def make_console() -> Console:
    """A stdout console for messages; wide enough for the tables when piped to a file."""
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return Console()
    return Console(width=PIPE_WIDTH)


class TerminalRenderer:
    """Tables for a terminal (or a text file)."""

    name: ClassVar[str] = "terminal"
    extension: ClassVar[str] = ".txt"
    output_is_binary: ClassVar[bool] = False

    def __init__(self, *, width: int = PIPE_WIDTH, color: bool = False, top: int = 15) -> None:
        self.width, self.color, self.top = width, color, top

    @classmethod
    def for_stdout(cls, top: int = 15) -> TerminalRenderer:
        """Sized and coloured for this process's stdout."""
        tty = sys.stdout.isatty()
        if tty or "COLUMNS" in os.environ:
            width = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
        else:
            width = PIPE_WIDTH
        return cls(width=width, color=tty, top=top)

    def render(self, record: Record) -> str:
        """The whole terminal view of ``record``; every string of it escaped and cut for a
        terminal first (see :mod:`attnprof.render.safe`)."""
        record = terminal_safe(record)
        buffer = io.StringIO()
        console = Console(file=buffer, width=self.width, force_terminal=self.color,
                          color_system="auto" if self.color else None, highlight=self.color)
        for kind in type(record).__mro__:
            if kind in _VIEWS:
                _VIEWS[kind](record, console, self.top)
                return buffer.getvalue()
        raise TypeError(f"no terminal view of {type(record).__name__}")


# Each view imports its tables when used: `attnprof analyze`, where start-up counts, needs
# only the trace report.
def _compare(record: CompareRecord, console: Console, top: int) -> None:
    from attnprof.render.compare_table import render_compare, render_findings_by_variant

    render_compare(record, console)
    render_findings_by_variant(record, console)
    _budgets(record.budgets, console)
    if record.price is not None:
        from attnprof.render.cost_table import render_costs

        render_costs(record, console)


def _budgets(report: BudgetReport | None, console: Console) -> None:
    if report is not None:
        from attnprof.render.budget_table import render_budgets

        render_budgets(report, console)


def _profile(record: ProfileRecord, console: Console, top: int) -> None:
    from attnprof.render.compare_table import render_compare

    render_compare(record, console)
    for row in record.results:
        if row.analysis is not None:
            console.rule(Text(row.variant, style="bold"))
            render_trace_report(row.analysis, console, top=top)
        elif row.status != "ok":
            line = Text(f"{row.variant}: {row.status}", style="yellow")
            console.print(line.append(f" — {row.reason}", style=""))


def _analyze(record: AnalyzeRecord, console: Console, top: int) -> None:
    for report in record.reports:
        render_trace_report(report, console, top=top)
    for bad in record.unreadable:
        line = Text(f"skipped {bad.source}", style="yellow")
        console.print(line.append(f": {bad.reason}", style=""))


def _sweep(record: SweepRecord, console: Console, top: int) -> None:
    from attnprof.render.cost_table import render_sweep_costs
    from attnprof.render.sweep_table import render_sweep

    render_sweep(record, console)
    render_sweep_costs(record, console)
    _budgets(record.budgets, console)


def _recommend(record: RecommendRecord, console: Console, top: int) -> None:
    from attnprof.render.recommend_table import render_recommendations, render_structures

    rec = record.recommendation
    if rec is None:  # a recommend record is made with one; an edited file may lack it
        console.print(Text("no recommendation in this record", style="yellow"))
        return
    render_recommendations(rec.recommendations, rec.constraints, console, rec.source,
                           objective=rec.objective, price=rec.price)
    render_structures(rec.structures, console)


def _check(record: CheckRecord, console: Console, top: int) -> None:
    from attnprof.render.check_terminal import render_check

    render_check(record.rows, console, title=record.title, source=record.source,
                 region=record.region)


def _limits(record: LimitsRecord, console: Console, top: int) -> None:
    from attnprof.render.limits_table import render_limits

    env = record.environment
    render_limits(record.ceilings, record.base, console,
                  threads=threads_text(env.threads, env.cpus))


def _model(record: ModelRecord, console: Console, top: int) -> None:
    from attnprof.render.cost_table import render_model_costs
    from attnprof.render.model_view import render_model

    render_model(record, console, top)
    render_model_costs(record, console)


def _ranks(record: RanksRecord, console: Console, top: int) -> None:
    from attnprof.render.ranks_view import render_ranks

    render_ranks(record, console, top)


def _diff(record: DiffRecord, console: Console, top: int) -> None:
    from attnprof.render.diff_view import render_diff

    render_diff(record, console, top)


_VIEWS: dict[type, Callable[[Any, Console, int], None]] = {
    ProfileRecord: _profile,
    CompareRecord: _compare,
    AnalyzeRecord: _analyze,
    RecommendRecord: _recommend,
    SweepRecord: _sweep,
    ModelRecord: _model,
    RanksRecord: _ranks,
    DiffRecord: _diff,
    CheckRecord: _check,
    LimitsRecord: _limits,
}
