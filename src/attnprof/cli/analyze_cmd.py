"""``attnprof analyze TRACE...``: explain torch.profiler traces, without importing torch.

Each trace is loaded, analysed (regions, kernels per forward, op tree, time, memory,
findings) and printed. Every trace is read and analysed before anything is printed or
written, so an unreadable file fails the command at once, with no output file.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

NAME = "analyze"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="explain torch.profiler traces (kernels, ops, findings)",
                       description="Analyse torch.profiler Chrome traces (.json or .json.gz): "
                                   "kernels per forward, op tree, CPU vs device time, memory "
                                   "and findings with evidence and fixes.")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace files to analyse")
    p.add_argument("--json", metavar="PATH", help="write the analysis (JSON) to PATH")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="rows per table (default 15)")
    p.add_argument("--region", metavar="REGEX",
                   help="treat the user annotations (record_function labels) matching REGEX "
                        "as the regions, instead of attnprof::* or ProfilerStep#N")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.atomic import check_writable
    from attnprof.errors import UsageError
    from attnprof.render.report_json import write_analysis_json
    from attnprof.render.terminal import make_console
    from attnprof.render.trace_report import render_trace_report
    from attnprof.trace import load_trace

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    if args.json:
        check_writable(args.json)
    if args.region is not None:
        try:
            re.compile(args.region)
        except re.error as exc:
            raise UsageError(f"--region {args.region!r} is not a regular expression ({exc})"
                             ) from None
    reports = [analyze_trace(load_trace(path), region_pattern=args.region)
               for path in args.traces]
    console = make_console()
    for report in reports:
        render_trace_report(report, console, top=args.top)
    if args.json:
        write_analysis_json(args.json, reports)
        console.print(f"[dim]analysis written to {args.json}[/dim]")
    return 0
