"""What every command says at its end: which files it wrote, the budgets' verdict, and
its exit status (the one table, :mod:`attnprof.exit_codes`: 0 done, 1 a check failed, 2 a
usage error, 3 finished with results that are not answers — here, rows that could not be
measured); and
what it hands back to :func:`attnprof.cli.main.main` (that status and its record)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from attnprof.exit_codes import ExitCode

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.base import RecordBase
    from attnprof.record.compare import CompareRecord
    from attnprof.record.sweep import SweepRecord
    from attnprof.store import PreparedRun
    from attnprof.workload.budgets import Budgets


class Finished(msgspec.Struct, frozen=True):
    """A command's end: its exit status and the record it made, which ``main`` saves to
    the results store (the one place that does); ``prepared``: the slow part of that
    save, begun while the command drew the record's view
    (:func:`~attnprof.cli.storing.prepare_saving`)."""

    status: int
    record: RecordBase | None = None
    prepared: PreparedRun | None = None


def print_written(console: Console, outputs: list[tuple[str, str | None]]) -> None:
    """One dim line per file written (``(what, path)``; ``None``: not asked for), the path
    made safe for the terminal: a user's path is not markup."""
    from rich.text import Text

    from attnprof.formatting import safe_text

    for what, path in outputs:
        if path:
            console.print(Text(f"{what} written to {safe_text(path)}", style="dim"))


def judge_budgets(budgets: Budgets | None, record: CompareRecord | SweepRecord,
                  source: str | None) -> None:
    """Check ``record``'s rows against ``budgets`` (read from ``source``) and keep the
    verdict in the record (``record.budgets``), where every renderer shows it."""
    if budgets is None:
        return
    from attnprof.analysis.budgets import check_budgets, measured_rows

    record.budgets = check_budgets(budgets, measured_rows(record), source=source or "")


def budget_status(record: CompareRecord | SweepRecord) -> int:
    """The exit status of the budgets verdict in ``record``: 1 when a budget fails, else 0
    (also with no budgets)."""
    failed = record.budgets is not None and not record.budgets.ok
    return ExitCode.FAILED if failed else ExitCode.OK


#: Row statuses that say nothing about the variant at that shape: it could not be
#: measured (``oom``, ``unsupported`` and ``skipped`` are answers).
UNMEASURED = ("crashed", "error", "timeout")
#: Exit status of a sweep (or recommend, limits) with such rows; every result is kept.
UNMEASURED_EXIT = ExitCode.UNMEASURED


def rows_status(statuses: Iterable[str]) -> int:
    """``3`` when one of the rows' ``statuses`` crashed, erred or timed out, else ``0``:
    every command that measures rows (compare, model, sweep, recommend) decides alike."""
    return UNMEASURED_EXIT if any(s in UNMEASURED for s in statuses) else ExitCode.OK


def sweep_status(record: SweepRecord) -> int:
    """``3`` when a row of the sweep (or of the batches recommend measured) crashed, erred
    or timed out, else ``0``."""
    points = [*record.points, *record.batch_points]
    return rows_status(r.status for p in points for r in p.results)
