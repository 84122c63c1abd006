"""What the grid commands (sweep, recommend) share between parsing and printing: check
every output and input file first, run the sweep with a progress bar, saving the record
after every point, then write the CSV, the plot and the budgets verdict.

Not a command: the commands share it, and it only turns flags into library calls.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from attnprof.cli.flags import SharedFlags
from attnprof.cli.outcome import budget_status, print_written, sweep_status
from attnprof.cli.reports import write_reports

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.sweep import SweepRecord
    from attnprof.workload.budgets import Budgets


def check_outputs(args: argparse.Namespace) -> tuple[Budgets | None, SweepRecord | None]:
    """Refuse bad output paths, a malformed budgets file or an unreadable record to
    resume before anything runs; return the budgets and the record to resume."""
    from attnprof.atomic import check_writable
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.commands.compare import variant_files
    from attnprof.outputs import Output, create_folders

    flags = SharedFlags.of(args)
    # The record goes to --json, else back to the file it resumes: that one is an output
    # then, and an input (which no other output may replace) only beside a --json.
    record = ("--json", flags.json) if flags.json else ("--resume", flags.resume)
    outputs = [Output(flag, path) for flag, path in
               (record, ("--csv", flags.csv), ("--plot", flags.plot)) if path is not None]
    inputs = [*([flags.budgets] if flags.budgets else []), *variant_files(flags.variants),
              *([flags.resume] if flags.resume and flags.json else [])]
    plan = plan_outputs(args, outputs, inputs, figures=Figures(args.command))
    if flags.plot:
        from attnprof.render.images import check_image_path

        check_image_path(flags.plot, "--plot")
    budgets = None
    if flags.budgets:
        from attnprof.workload.budgets import load_budgets

        budgets = load_budgets(flags.budgets)
    resume = None
    if flags.resume:
        from attnprof.record.sweep import SweepRecord

        resume = SweepRecord.load(flags.resume)
        check_writable(flags.json or flags.resume, "--resume")
    create_folders(plan)  # only now: a mistake found above leaves nothing behind
    return budgets, resume


def run_planned_sweep(args: argparse.Namespace, resume: SweepRecord | None) -> SweepRecord:
    """Plan from the flags (and the record resumed), run with a progress bar, save after
    every point; a stop (Ctrl-C, SIGTERM, SIGHUP: the one handler of
    :mod:`attnprof.signals`, installed by the CLI's main) keeps every finished point and
    says how to resume."""
    from attnprof.cli.sweep_args import executor_from_args, plan_from_args
    from attnprof.measure.environment import collect_environment
    from attnprof.record.sweep import needs_rerun
    from attnprof.render.progress import SweepProgress
    from attnprof.run.sweep import check_resumable, run_sweep
    from attnprof.workload.grid import INTEGER_FIELDS

    plan = plan_from_args(args, resume)
    if resume is not None:
        check_resumable(resume, plan, collect_environment(plan.base.device))
    executor = executor_from_args(args, plan)
    flags = SharedFlags.of(args)
    path = flags.record_path
    saved: list[int] = []

    def save(record: SweepRecord) -> None:
        if path:
            record.save(path)
            saved.append(len(record.points))

    if flags.plot and not any(f in INTEGER_FIELDS for f in plan.grid.fields):
        from attnprof.errors import UsageError

        raise UsageError("--plot needs a swept size field (e.g. --seq 256..4096x2); this "
                         "sweep varies only names")
    kept = sum(not any(map(needs_rerun, p.results)) for p in resume.points) if resume else 0
    with SweepProgress(plan.grid.size(), done=kept) as bar:
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

    flags = SharedFlags.of(args)
    path = flags.record_path
    if path and record.budgets is not None:
        record.save(path)
    if flags.csv:
        write_rendered(CsvRenderer(), record, flags.csv)
    if flags.plot:
        from attnprof.render.figures.sweep import scaling_plot
        from attnprof.render.images import write_figure

        write_figure(scaling_plot(record), flags.plot)
    print_written(console, [("record", path), ("CSV", flags.csv), ("plot", flags.plot)])
    write_reports(args, record, console)
    if not path:
        from attnprof.store import store_path

        # The store keeps the record (the next line says where); a file is what resumes.
        stored = store_path(flags.store, no_store=flags.no_store) is not None
        console.print("[dim]add --json PATH to keep a record file that resumes an interrupted "
                      "sweep[/dim]" if stored else "[dim]add --json PATH to keep the record "
                      "(and to resume an interrupted sweep)[/dim]")
    return budget_status(record) or sweep_status(record)

