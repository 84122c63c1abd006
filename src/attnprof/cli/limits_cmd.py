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
    from attnprof.run.limits import Probe

NAME = "limits"
SAVES_RECORDS = True


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


class _ProbeLines:
    """The search's progress: a line per variant and mode, then one per probe, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console

        self._log = Console(stderr=True)

    def searching(self, variant: str, mode: str, size_field: str) -> None:
        self._log.print(f"[bold]{variant}[/bold] {mode}: searching {size_field} …")

    def probe(self, variant: str, mode: str, size_field: str, probe: Probe) -> None:
        from attnprof.render.limits_table import describe_probe

        self._log.print(describe_probe(variant, mode, size_field, probe))


def run(args: argparse.Namespace) -> Finished:
    from attnprof.cli.outcome import UNMEASURED_EXIT, Finished, print_written
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.cli.workload_args import workload_fields
    from attnprof.commands import limits
    from attnprof.commands.compare import variant_files
    from attnprof.outputs import Output
    from attnprof.render.terminal import TerminalRenderer, make_console

    plan = plan_outputs(args, [Output("--json", args.json)] if args.json is not None else [],
                        variant_files(args.variants), figures=Figures("limits"))
    request = limits.LimitsRequest(
        variants=tuple(args.variants), field=args.field, workload=workload_fields(args),
        memory_budget=args.memory_budget, step=args.step, max=args.max,
        probe_timeout=args.probe_timeout, min_time=args.min_time, threads=args.threads,
        executor=args.executor, ray_address=args.ray_address, json=args.json,
        outputs=tuple(plan))
    record = limits.run(request, _ProbeLines())
    console = make_console()
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    sys.stdout.flush()
    # A probe that timed out does not fit in time (the table says so); one that crashed or
    # erred says nothing about memory, and the ceiling leans on it: exit 3.
    unmeasured = any(p.status in ("crashed", "error") for c in record.ceilings
                     for p in c.probes)
    return Finished(UNMEASURED_EXIT if unmeasured else ExitCode.OK, record)
