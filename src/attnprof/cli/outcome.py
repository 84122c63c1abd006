"""What every command says at its end: which files it wrote, and the budgets' verdict; and
what it hands back to :func:`attnprof.cli.main.main` (its exit status and its record)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.base import RecordBase
    from attnprof.record.compare import CompareRecord
    from attnprof.record.sweep import SweepRecord
    from attnprof.spec.budgets import Budgets


@dataclass(frozen=True)
class Finished:
    """A command's end: its exit status and the record it made, which ``main`` saves to
    the results store (the one place that does)."""

    status: int
    record: RecordBase | None = None


def print_written(console: Console, outputs: list[tuple[str, str | None]]) -> None:
    """One dim line per file written (``(what, path)``; ``None``: not asked for), the path
    made safe for the terminal: a user's path is not markup."""
    from rich.text import Text

    from attnprof.formatting import safe_text

    for what, path in outputs:
        if path:
            console.print(Text(f"{what} written to {safe_text(path)}", style="dim"))


def budget_status(budgets: Budgets | None, record: CompareRecord | SweepRecord,
                  console: Console, source: str) -> int:
    """Check ``record``'s rows against ``budgets`` (read from ``source``), show the verdict;
    the exit status: 1 when a budget fails, else 0 (also with no budgets)."""
    if budgets is None:
        return 0
    from attnprof.analysis.budgets import check_budgets, measured_rows
    from attnprof.render.budget_table import render_budgets

    report = check_budgets(budgets, measured_rows(record))
    render_budgets(report, console, source)
    return 0 if report.ok else 1
