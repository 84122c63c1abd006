"""``attnprof compare``: measure attention variants side by side (the default command)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.parser import csv_list
from attnprof.cli.workload_args import (
    add_timing_arguments,
    add_workload_arguments,
    workload_fields,
)

NAME = "compare"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="measure attention variants side by side (default)",
                       description="Measure attention variants side by side on one workload.")
    add_workload_arguments(p)
    p.add_argument("--variants", "-v", type=csv_list, action="extend",
                   help="comma-separated variant names or path/to/file.py:callable "
                        "(default: all built-in); see --list-variants")
    p.add_argument("--list-variants", action="store_true", help="list variants and exit")
    p.add_argument("--json", metavar="PATH", help="write the run record (JSON) to PATH")
    p.add_argument("--csv", metavar="PATH",
                   help="write one CSV line per variant (with the workload's fields) to PATH")
    add_timing_arguments(p)
    p.add_argument("--trace", metavar="DIR",
                   help="also write a torch.profiler trace (.json.gz) of each variant to DIR")
    p.add_argument("--trace-steps", type=int, default=3, metavar="N",
                   help="profiled steps per trace (default 3)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from attnprof.render.terminal import make_console, render_compare, render_variant_list

    console = make_console()
    if args.list_variants:
        from attnprof.variants import REGISTRY

        render_variant_list(list(REGISTRY.values()), console)
        return 0
    if args.csv:
        from attnprof.atomic import check_writable

        check_writable(args.csv)
    record = run_comparison(args, console, variants=args.variants, json_path=args.json,
                            trace_dir=args.trace, trace_steps=args.trace_steps)
    if args.csv:
        from attnprof.render.report_csv import write_csv

        write_csv(args.csv, record)
    if args.trace:
        from attnprof.analysis.analyze import analyze_record

        analyze_record(record)
        if args.json:
            record.save(args.json)
    render_compare(record, console)
    if args.trace:
        from attnprof.render.trace_report import render_findings_by_variant

        render_findings_by_variant(record, console)
    for what, path in (("record", args.json), ("CSV", args.csv)):
        if path:
            console.print(f"[dim]{what} written to {path}[/dim]")
    return 0


def run_comparison(args: argparse.Namespace, console: Any, *, variants: list[str] | None,
                   json_path: str | None = None, trace_dir: str | None = None,
                   trace_steps: int = 3) -> Any:
    """Validate everything, then measure with a progress bar, saving after every variant.

    ``args`` supplies what every measuring command shares (workload flags, ``--min-time``,
    ``--seed``); the rest differs per command and is passed explicitly.
    """
    from attnprof.atomic import check_trace_dir, check_writable
    from attnprof.errors import UsageError
    from attnprof.measure.capture import CaptureSpec
    from attnprof.measure.timer import TimingPlan
    from attnprof.render.progress import ComparisonProgress
    from attnprof.run.compare import Settings, compare, prepare

    if args.min_time is not None and args.min_time <= 0:
        raise UsageError(f"--min-time must be positive, got {args.min_time}")
    if args.rounds < 1:
        raise UsageError(f"--rounds must be a positive integer, got {args.rounds}")
    if json_path:
        check_writable(json_path)
    traces = check_trace_dir(trace_dir) if trace_dir else None
    if trace_steps <= 0:
        raise UsageError(f"--trace-steps must be a positive integer, got {trace_steps}")
    workload, chosen = prepare(None, variants, **workload_fields(args))
    min_time = args.min_time or (1.0 if workload.device_type == "cuda" else 0.4)
    settings = Settings(plan=TimingPlan(min_time_s=min_time, rounds=args.rounds),
                        seed=args.seed, trace_dir=traces, trace=CaptureSpec(steps=trace_steps))
    saved: list[bool] = []  # whether this run wrote json_path yet

    def save(record: Any) -> None:
        record.save(json_path)
        saved.append(True)

    with ComparisonProgress(console, [v.name for v in chosen]) as progress:
        try:
            return compare(workload, chosen, settings=settings,
                           progress=progress.update,
                           on_result=save if json_path else None)
        except KeyboardInterrupt:
            if json_path and saved:
                print(f"attnprof: interrupted; finished variants are in {json_path}",
                      file=sys.stderr)
            elif json_path:
                print(f"attnprof: interrupted; no variant had finished, {json_path} not written",
                      file=sys.stderr)
            raise
