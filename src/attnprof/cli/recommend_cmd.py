"""``attnprof recommend``: the best variant per shape under latency and memory limits,
from a sweep run now or a sweep record (``--from``)."""

from __future__ import annotations

import argparse
from typing import Any

from attnprof.cli.outcome import Finished
from attnprof.cli.sweep_args import add_grid_arguments, add_run_arguments

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
    p.add_argument("--max-latency", metavar="TIME", help="latency limit per step, e.g. 5ms")
    p.add_argument("--max-memory", metavar="SIZE", help="peak memory limit, e.g. 2GiB")
    p.add_argument("--from", dest="from_record", metavar="SWEEP_RECORD",
                   help="recommend from this sweep record instead of running")
    p.add_argument("--json", metavar="PATH", help="write the sweep record run for it to PATH")
    add_run_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    from attnprof.analysis.recommend import Constraints, batch_estimates, recommend
    from attnprof.cli.sweep_args import grid_from_args
    from attnprof.errors import UsageError
    from attnprof.record.sweep import SweepPoint, SweepRecord
    from attnprof.render.recommend_table import render_recommendations
    from attnprof.render.terminal import make_console
    from attnprof.spec.quantities import parse_bytes, parse_ms

    constraints = Constraints(
        max_latency_ms=parse_ms("--max-latency", args.max_latency) if args.max_latency else None,
        max_memory_bytes=(parse_bytes("--max-memory", args.max_memory) if args.max_memory
                          else None))
    console = make_console()
    extra: list[SweepPoint] = []
    if args.from_record:
        grid, fixed = grid_from_args(args)
        if grid.axes or fixed or args.variants:
            raise UsageError("--from reads a finished sweep: drop the workload flags and "
                             "--variants, or run without --from")
        record = SweepRecord.load(args.from_record)
        source = f"from {args.from_record}"
    else:
        from attnprof.cli.sweep_args import executor_from_args
        from attnprof.cli.sweeping import check_outputs, run_planned_sweep
        from attnprof.run.recommend import measure_batches

        check_outputs(args)
        record = run_planned_sweep(args, None)
        source = "measured now"
        estimates = batch_estimates(record.points, record.variants, constraints)
        if estimates:
            console.print(f"[dim]measuring {len(estimates)} larger batch(es) within "
                          "--max-memory …[/dim]")
            # Each larger batch runs in a worker capped at the limit: one that does not
            # fit runs out of memory there instead of being guessed.
            cap = args.worker_memory or (None if args.executor == "inline"
                                         else str(constraints.max_memory_bytes))
            capped = argparse.Namespace(**{**vars(args), "worker_memory": cap})
            extra = measure_batches(record, estimates,
                                    executor_from_args(capped, record.base.device))
    recs = recommend(record.points, record.variants, constraints, extra)
    render_recommendations(recs, constraints, console, source)
    # A sweep run for the recommendation is a new record; one read --from is stored already.
    return Finished(0, None if args.from_record else record)

