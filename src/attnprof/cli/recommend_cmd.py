"""``attnprof recommend``: the best variant per shape under latency and memory limits,
from a sweep run now or a sweep record (``--from``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from attnprof.cli.config_args import add_from_config_argument, apply_from_config
from attnprof.cli.outcome import Finished
from attnprof.cli.pricing import add_objective_argument
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.sweep_args import add_grid_arguments, add_run_arguments

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.render.progress import SweepProgress

NAME = "recommend"
SAVES_RECORDS = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="name the best variant per shape under latency/memory limits",
                       description="Run the candidates over the shapes given (or read a sweep "
                                   "record) and name, per shape, the fastest variant that ran, "
                                   "is within tolerance and meets the limits; the runner-up; "
                                   "what decided it; and, under a memory limit, the throughput "
                                   "of the largest batch each candidate fits.")
    add_grid_arguments(p)
    add_from_config_argument(p)
    p.add_argument("--max-latency", metavar="TIME", help="latency limit per step, e.g. 5ms")
    p.add_argument("--max-memory", metavar="SIZE", help="peak memory limit, e.g. 2GiB")
    p.add_argument("--from", dest="from_record", metavar="SWEEP_RECORD",
                   help="recommend from this sweep record instead of running")
    p.add_argument("--json", metavar="PATH",
                   help="write the sweep record with the recommendation to PATH (with --from: "
                        "the record read, the recommendation added)")
    add_objective_argument(p)
    add_report_arguments(p)
    add_run_arguments(p)
    p.set_defaults(run=run)


class _Shown:
    """recommend's progress: the sweep's bar, and a dim line before the larger batches."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def points(self, total: int, done: int) -> SweepProgress:
        from attnprof.render.progress import SweepProgress

        return SweepProgress(total, done)

    def note(self, text: str) -> None:
        from rich.text import Text

        self._console.print(Text(text, style="dim"))


def run(args: argparse.Namespace) -> Finished:
    from attnprof.cli.outcome import print_written, sweep_status
    from attnprof.cli.pricing import objective_price
    from attnprof.cli.sweep_args import grid_from_args
    from attnprof.commands import recommend
    from attnprof.errors import UsageError
    from attnprof.render.terminal import TerminalRenderer, make_console

    apply_from_config(args, text=True)
    prices = objective_price(args)  # a missing or bad price fails before anything runs
    console = make_console()
    if args.from_record:
        grid, fixed = grid_from_args(args)
        if grid.axes or fixed or args.variants:
            raise UsageError("--from reads a finished sweep: drop the workload flags and "
                             "--variants, or run without --from")
        from attnprof.cli.planning import Figures, plan_outputs
        from attnprof.outputs import Output

        plan = plan_outputs(args, [Output("--json", args.json)] if args.json else [],
                            [args.from_record], figures=Figures("recommend"))
        request = recommend.RecommendRequest(
            from_record=args.from_record, max_latency=args.max_latency,
            max_memory=args.max_memory, worker_memory=args.worker_memory, json=args.json,
            outputs=tuple(plan), objective=args.objective, price=prices)
    else:
        from attnprof.cli.sweeping import sweep_request

        request = recommend.RecommendRequest(
            sweep=sweep_request(args), max_latency=args.max_latency,
            max_memory=args.max_memory, worker_memory=args.worker_memory, json=args.json,
            objective=args.objective, price=prices)
    record = recommend.run(request, _Shown(console))
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    # A sweep run for the recommendation is a new record; one read --from is stored already.
    return Finished(sweep_status(record), None if args.from_record else record)
