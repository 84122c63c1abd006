"""What the grid commands (sweep, recommend) share between parsing and printing: check
every output and input file first, run the sweep with a progress bar, saving the record
after every point, then write the CSV, the plot and the budgets verdict.

Not a command: the commands share it, and it only turns flags into library calls.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

from attnprof.cli.outcome import budget_status, print_written, sweep_status
from attnprof.cli.reports import report_outputs, write_reports

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.sweep import SweepRecord
    from attnprof.spec.budgets import Budgets


def check_outputs(args: argparse.Namespace) -> tuple[Budgets | None, SweepRecord | None]:
    """Refuse bad output paths, a malformed budgets file or an unreadable record to
    resume before anything runs; return the budgets and the record to resume."""
    from attnprof.atomic import check_writable
    from attnprof.cli.measuring import variant_files
    from attnprof.outputs import Output, check_outputs

    outputs = [Output(f"--{flag}", getattr(args, flag)) for flag in ("json", "csv", "plot")
               if getattr(args, flag, None) is not None]
    budgets_file = getattr(args, "budgets", None)
    inputs = [*([budgets_file] if budgets_file else []),
              *variant_files(getattr(args, "variants", None) or [])]
    check_outputs([*outputs, *report_outputs(args)], inputs=inputs)
    if getattr(args, "plot", None):
        from attnprof.render.images import check_image_path

        check_image_path(args.plot, "--plot")
    budgets = None
    if getattr(args, "budgets", None):
        from attnprof.spec.budgets import load_budgets

        budgets = load_budgets(args.budgets)
    resume = None
    if getattr(args, "resume", None):
        from attnprof.record.sweep import SweepRecord

        resume = SweepRecord.load(args.resume)
        check_writable(args.json or args.resume, "--resume")
    return budgets, resume


def run_planned_sweep(args: argparse.Namespace, resume: SweepRecord | None) -> SweepRecord:
    """Plan from the flags (and the record resumed), run with a progress bar, save after
    every point; a Ctrl-C or SIGTERM keeps every finished point and says how to resume."""
    from attnprof.cli.sweep_args import executor_from_args, plan_from_args
    from attnprof.measure.environment import collect_environment
    from attnprof.record.sweep import needs_rerun
    from attnprof.render.progress import SweepProgress
    from attnprof.run.sweep import check_resumable, run_sweep
    from attnprof.spec.grid import INTEGER_FIELDS

    plan = plan_from_args(args, resume)
    if resume is not None:
        check_resumable(resume, plan, collect_environment(plan.base.device))
    executor = executor_from_args(args, plan)
    path = getattr(args, "json", None) or getattr(args, "resume", None)
    saved: list[int] = []

    def save(record: SweepRecord) -> None:
        if path:
            record.save(path)
            saved.append(len(record.points))

    if getattr(args, "plot", None) and not any(f in INTEGER_FIELDS for f in plan.grid.fields):
        from attnprof.errors import UsageError

        raise UsageError("--plot needs a swept size field (e.g. --seq 256..4096x2); this "
                         "sweep varies only names")
    kept = sum(not any(map(needs_rerun, p.results)) for p in resume.points) if resume else 0
    with _sigterm_as_interrupt(), SweepProgress(plan.grid.size(), done=kept) as bar:
        try:
            return run_sweep(plan, executor, record=resume, on_point=save, progress=bar)
        except KeyboardInterrupt:
            if path and saved:
                print(f"attnprof: interrupted; {saved[-1]} finished point(s) are in {path}; "
                      f"continue with --resume {path}", file=sys.stderr)
            elif path:
                print(f"attnprof: interrupted before any point finished; {path} not written",
                      file=sys.stderr)
            raise


def finish_outputs(args: argparse.Namespace, record: SweepRecord, console: Console) -> int:
    """The record again with its budgets verdict, CSV, plot and reports; the exit status:
    1 when a budget fails, else 3 when a row could not be measured (crashed, error,
    timeout), else 0."""
    from attnprof.render import CsvRenderer, write_rendered

    path = getattr(args, "json", None) or getattr(args, "resume", None)
    if path and record.budgets is not None:
        record.save(path)
    if getattr(args, "csv", None):
        write_rendered(CsvRenderer(), record, args.csv)
    if getattr(args, "plot", None):
        from attnprof.render.figures.sweep import scaling_plot
        from attnprof.render.images import write_figure

        write_figure(scaling_plot(record), args.plot)
    print_written(console, [("record", path), ("CSV", getattr(args, "csv", None)),
                            ("plot", getattr(args, "plot", None))])
    write_reports(args, record, console)
    if not path:
        console.print("[dim]add --json PATH to keep the record (and to resume an "
                      "interrupted sweep)[/dim]")
    return budget_status(record) or sweep_status(record)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler's stop, ``kill``) ends the sweep like Ctrl-C: the running point
    is abandoned, every finished one is already saved."""
    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
