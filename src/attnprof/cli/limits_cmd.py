"""``attnprof limits``: the largest sequence (or batch) each variant fits in, found by
bisection on real runs in memory-capped workers, beside the textbook estimate."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from attnprof.cli.parser import csv_list
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.workload_args import add_threads_argument, add_workload_arguments
from attnprof.exit_codes import ExitCode

if TYPE_CHECKING:
    from attnprof.cli.outcome import Finished

NAME = "limits"
SAVES_RECORDS = True
#: Modes searched when --mode is not given: inference and training.
DEFAULT_MODES = ("forward", "forward+backward")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="find the largest size each variant fits in a memory budget",
                       description="Bisect on real runs, each in a fresh worker capped at the "
                                   "budget, for the largest --field each variant runs at "
                                   "(forward and forward+backward unless --mode says), "
                                   "confirm it with a measured run, and show the textbook "
                                   "estimate beside it.")
    p.add_argument("--variants", "-v", type=csv_list, action="extend", required=True,
                   help="comma-separated variant names or path/to/file.py:callable")
    p.add_argument("--field", choices=("seq", "batch"), default="seq",
                   help="the size to search (default seq)")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help="memory each run may use, e.g. 8GiB (default: what the device has)")
    p.add_argument("--step", type=int, metavar="N",
                   help="granularity of the search (default 64 for seq, 1 for batch)")
    p.add_argument("--max", type=int, metavar="N",
                   help="largest size to try (default: where q/k/v alone exceed the budget; "
                        "on a CPU, large fused sizes take minutes per step, so cap it)")
    p.add_argument("--probe-timeout", metavar="SECONDS",
                   help="a probe running longer counts as not fitting in time (default 120 s "
                        "on CPU, 60 s on CUDA)")
    p.add_argument("--min-time", type=float, default=0.2, metavar="S",
                   help="seconds of sampling in the confirming run (default 0.2)")
    p.add_argument("--executor", choices=("process", "ray"), default="process",
                   help="where each capped probe runs: a fresh local worker process "
                        "(default), or a Ray task (--ray-address or RAY_ADDRESS, else a "
                        "local Ray instance)")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="Ray cluster to run on (default: RAY_ADDRESS, else a local one)")
    add_workload_arguments(p)
    add_threads_argument(p)
    p.add_argument("--json", metavar="PATH", help="write the limits record (JSON) to PATH")
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    from rich.console import Console

    from attnprof.cli.outcome import UNMEASURED_EXIT, Finished, print_written
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.cli.workload_args import threads_from_args, workload_fields
    from attnprof.commands.compare import variant_files
    from attnprof.errors import UsageError
    from attnprof.measure.device import memory_capacity_bytes
    from attnprof.measure.environment import collect_environment
    from attnprof.measure.threads import measuring_threads
    from attnprof.outputs import Output, create_folders
    from attnprof.record.limits import LimitsRecord
    from attnprof.render.limits_table import describe_probe
    from attnprof.render.terminal import TerminalRenderer, make_console
    from attnprof.run.compare import prepare
    from attnprof.run.limits import Probe, find_ceiling
    from attnprof.workload.quantities import parse_bytes, parse_seconds
    from attnprof.workload.settings import Settings, TimingPlan, check_seconds

    fields = workload_fields(args)
    if args.field in fields:
        raise UsageError(f"--{args.field} is what limits searches; set --max (and --step) "
                         "instead")
    step = args.step if args.step is not None else (64 if args.field == "seq" else 1)
    for flag, value in (("--step", step), ("--max", args.max)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive integer, got {value}")
    check_seconds("--min-time", args.min_time)
    plan = plan_outputs(args, [Output("--json", args.json)] if args.json is not None else [],
                        variant_files(args.variants), figures=Figures("limits"))
    modes = [fields.pop("mode")] if "mode" in fields else list(DEFAULT_MODES)
    base, variants = prepare(None, args.variants, **{**fields, args.field: step})
    budget = (parse_bytes("--memory-budget", args.memory_budget) if args.memory_budget
              else memory_capacity_bytes(base.device))
    timeout = (parse_seconds("--probe-timeout", args.probe_timeout) if args.probe_timeout
               else 60.0 if base.device_type == "cuda" else 120.0)
    # The confirming run is timed on the threads compare would use (one on a CPU unless
    # --threads says), so its latency reads as compare's does.
    threads = threads_from_args(args, base.device_type)
    confirm = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=args.min_time, min_samples=3,
                                       rounds=1),
                       check_accuracy=False, measure_ceilings=False, threads=threads)
    if args.ray_address and args.executor != "ray":
        raise UsageError("--ray-address is for --executor ray; add it or drop the address")
    executor_options = {"address": args.ray_address} if args.executor == "ray" else {}
    create_folders(plan)  # only now: a mistake found above leaves nothing behind
    log = Console(stderr=True)
    ceilings = []
    for variant in variants:
        for mode in modes:
            log.print(f"[bold]{variant.name}[/bold] {mode}: searching {args.field} …")

            def show(probe: Probe, name: str = variant.name, mode: str = mode) -> None:
                log.print(describe_probe(name, mode, args.field, probe))

            ceilings.append(find_ceiling(
                base.replace(mode=mode), variant, args.field, budget, step=step,
                maximum=args.max, probe_timeout_s=timeout, confirm=confirm, on_probe=show,
                executor=args.executor, executor_options=executor_options))
    with measuring_threads(threads):  # the environment states the threads it measured on
        environment = collect_environment(base.device)
    record = LimitsRecord(environment=environment, base=base,
                          field=args.field, budget_bytes=budget, ceilings=ceilings,
                          status="complete")
    console = make_console()
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    if args.json:
        record.save(args.json)
        print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    sys.stdout.flush()
    # A probe that timed out does not fit in time (the table says so); one that crashed or
    # erred says nothing about memory, and the ceiling leans on it: exit 3.
    unmeasured = any(p.status in ("crashed", "error") for c in ceilings for p in c.probes)
    return Finished(UNMEASURED_EXIT if unmeasured else ExitCode.OK, record)
