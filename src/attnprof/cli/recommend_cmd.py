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

    from attnprof.analysis.recommend import Constraints
    from attnprof.record.sweep import SweepPoint, SweepRecord

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


def run(args: argparse.Namespace) -> Finished:
    from attnprof.analysis.recommend import Constraints, recommend
    from attnprof.analysis.structure_choice import structure_choices
    from attnprof.cli.outcome import print_written, sweep_status
    from attnprof.cli.sweep_args import grid_from_args
    from attnprof.errors import UsageError
    from attnprof.record.recommendation import Recommended
    from attnprof.record.sweep import RecommendRecord, SweepRecord
    from attnprof.render.terminal import TerminalRenderer, make_console
    from attnprof.workload.quantities import parse_bytes, parse_ms

    apply_from_config(args, text=True)
    from attnprof.cli.pricing import objective_price, rank_by_objective

    prices = objective_price(args)  # a missing or bad price fails before anything runs
    constraints = Constraints(
        max_latency_ms=parse_ms("--max-latency", args.max_latency) if args.max_latency else None,
        max_memory_bytes=(parse_bytes("--max-memory", args.max_memory) if args.max_memory
                          else None))
    console = make_console()
    if args.from_record:
        grid, fixed = grid_from_args(args)
        if grid.axes or fixed or args.variants:
            raise UsageError("--from reads a finished sweep: drop the workload flags and "
                             "--variants, or run without --from")
        from attnprof.cli.planning import Figures, plan_outputs
        from attnprof.outputs import Output, create_folders

        create_folders(plan_outputs(args, [Output("--json", args.json)] if args.json else [],
                                    [args.from_record], figures=Figures("recommend")))
        record = SweepRecord.load(args.from_record)
        source = f"from {args.from_record}"
    else:
        from attnprof.cli.sweeping import check_outputs, run_planned_sweep

        check_outputs(args)
        record = run_planned_sweep(args, None)
        source = "measured now"
        record.batch_points = _larger_batches(args, record, constraints, console)
    recs = recommend(record.points, record.variants, constraints, record.batch_points)
    record = RecommendRecord.of_sweep(record)
    record.recommendation = Recommended(constraints=constraints, source=source,
                                        recommendations=recs,
                                        structures=structure_choices(record.points, recs))
    rank_by_objective(args, prices, record, console)
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    if args.json:
        record.save(args.json)
        print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    # A sweep run for the recommendation is a new record; one read --from is stored already.
    return Finished(sweep_status(record), None if args.from_record else record)


def _larger_batches(args: argparse.Namespace, record: SweepRecord, constraints: Constraints,
                    console: Console) -> list[SweepPoint]:
    """Under ``--max-memory``, each candidate measured at the largest batch its peak memory
    suggests (see :func:`~attnprof.analysis.recommend.batch_estimates`)."""
    from attnprof.analysis.recommend import batch_estimates
    from attnprof.cli.sweep_args import executor_for
    from attnprof.record.sweep import WorkerLimits
    from attnprof.run.limits import probe_cap
    from attnprof.run.recommend import measure_batches
    from attnprof.workload.quantities import parse_bytes

    estimates = batch_estimates(record.points, record.variants, constraints)
    limit = constraints.max_memory_bytes
    if not estimates or limit is None:
        return []
    console.print(f"[dim]measuring {len(estimates)} larger batch(es) within --max-memory …"
                  "[/dim]")
    # A larger batch that does not fit is judged by its measured peak; its worker's cap is
    # only there to stop one far beyond the limit before the kernel's OOM killer does.
    cap = (parse_bytes("--worker-memory", args.worker_memory) if args.worker_memory
           else probe_cap(limit, record.base.device))
    timeout = record.limits.point_timeout_s if record.limits else None
    executor = executor_for(args, record.executor,
                            WorkerLimits(point_timeout_s=timeout, worker_memory_bytes=cap))
    return measure_batches(record, estimates, executor, limit)
