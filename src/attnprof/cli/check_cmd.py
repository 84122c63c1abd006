"""``attnprof check --expect FILE TARGET``: expected vs observed, exit 1 on any mismatch.

TARGET is a trace file (analysed as ``attnprof analyze`` would) or a variant name (measured
and traced as ``attnprof profile`` would, with the workload flags). Exit status: 0 when every
expectation holds, 1 when any does not, 2 for a malformed expectations file or any other
user mistake.
"""

from __future__ import annotations

import argparse
from typing import Any

from attnprof.cli.outcome import Finished, print_written
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.workload_args import add_timing_arguments, add_workload_arguments
from attnprof.exit_codes import ExitCode

NAME = "check"
SAVES_RECORDS = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="check a variant or trace against an expectations file",
                       description="State what you expect per forward (TOML: kernels or ops "
                                   "by pattern and count, kernels per forward, latency, "
                                   "memory); see what ran; exit 1 on any mismatch.")
    p.add_argument("target", metavar="VARIANT_OR_TRACE",
                   help="a variant name (measured and traced now) or a trace file")
    p.add_argument("--expect", required=True, metavar="FILE", help="expectations (TOML)")
    add_workload_arguments(p)
    p.add_argument("--steps", type=int, default=3, metavar="N",
                   help="profiled steps when TARGET is a variant (default 3)")
    add_timing_arguments(p)
    p.add_argument("--json", metavar="PATH",
                   help="write the check's record (rows, verdict, the trace's analysis) to PATH")
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    import sys

    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.cli.workload_args import timing_from_args, workload_fields
    from attnprof.commands import check
    from attnprof.commands.compare import variant_files
    from attnprof.outputs import Output
    from attnprof.render.progress import CommandProgress
    from attnprof.render.terminal import TerminalRenderer, make_console

    trace = check.is_trace(args.target)
    plan = plan_outputs(args, [Output("--json", args.json)] if args.json is not None else [],
                        [args.expect, *([args.target] if trace else
                                        variant_files([args.target]))],
                        figures=Figures("check"))
    console = make_console()
    request = check.CheckRequest(
        expect=args.expect, target=args.target, workload=workload_fields(args),
        timing=timing_from_args(args), steps=args.steps, json=args.json, store=args.store,
        no_store=args.no_store, outputs=tuple(plan))
    record = check.run(request, CommandProgress(console))
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    return Finished(ExitCode.OK if record.ok else ExitCode.FAILED, record)
