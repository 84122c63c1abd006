"""What the grid commands (sweep, recommend) share between parsing and printing: check
every output and input file first and plan the sweep (the request of
:mod:`attnprof.commands.sweep`), then write the CSV, the plot and the reports.

Not a command: the commands share it, and it only turns flags into library calls.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from attnprof.cli.flags import SharedFlags
from attnprof.cli.outcome import budget_status, print_written, sweep_status
from attnprof.cli.reports import write_reports

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.commands.pricing import PriceRequest
    from attnprof.commands.sweep import SweepRequest
    from attnprof.record.sweep import SweepRecord


def sweep_request(args: argparse.Namespace) -> SweepRequest:
    """The sweep the flags ask for: every output and input checked first (bad paths, an
    unreadable record to resume), then planned (the record resumed supplies what the
    flags leave out)."""
    from attnprof.atomic import check_writable
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.cli.sweep_args import plan_from_args
    from attnprof.commands.compare import variant_files
    from attnprof.commands.sweep import SweepRequest
    from attnprof.outputs import Output
    from attnprof.workload.grid import INTEGER_FIELDS

    price = _price(args)  # a bad price fails before anything (torch included) is loaded
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
    resume = None
    if flags.resume:
        from attnprof.record.sweep import SweepRecord

        resume = SweepRecord.load(flags.resume)
        check_writable(flags.json or flags.resume, "--resume")
    sweep = plan_from_args(args, resume)
    if flags.plot and not any(f in INTEGER_FIELDS for f in sweep.grid.fields):
        from attnprof.errors import UsageError

        raise UsageError("--plot needs a swept size field (e.g. --seq 256..4096x2); this "
                         "sweep varies only names")
    return SweepRequest(plan=sweep, resume=resume, json=flags.record_path,
                        budgets=flags.budgets, ray_address=args.ray_address,
                        outputs=tuple(plan), price=price)


def _price(args: argparse.Namespace) -> PriceRequest | None:
    """The sweep's price flags (sweep has them; recommend passes its own to the request)."""
    from attnprof.cli.pricing import price_request

    return price_request(args) if args.command == "sweep" else None


def finish_outputs(args: argparse.Namespace, record: SweepRecord, console: Console) -> int:
    """The CSV, the plot and the reports, and what was written; the exit status:
    1 when a budget fails, else 3 when a row could not be measured (crashed, error,
    timeout), else 0."""
    from attnprof.render import CsvRenderer, write_rendered

    flags = SharedFlags.of(args)
    path = flags.record_path
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

