"""``attnprof analyze TRACE...``: explain torch.profiler traces, without importing torch.

Each trace is loaded, analysed (regions, kernels per forward, op tree, time, memory,
findings) and printed. A folder stands for the traces in it (``*.json``, ``*.json.gz``, in
name order), as written by ``compare --trace`` or one file per rank by a distributed run.
Every trace is read and analysed before anything is printed or written, so an unreadable
file fails the command at once, with no output file.
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
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="trace files to analyse, or folders of them")
    p.add_argument("--json", metavar="PATH", help="write the analysis (JSON) to PATH")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="rows per table (default 15)")
    p.add_argument("--region", metavar="REGEX",
                   help="treat the user annotations (record_function labels) matching REGEX "
                        "as the regions, instead of attnprof::* or ProfilerStep#N")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    _no_blas_threads()
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
    paths = [p for given in args.traces for p in expand_trace_paths(given)]
    reports = [analyze_trace(load_trace(path), region_pattern=args.region) for path in paths]
    console = make_console()
    for report in reports:
        render_trace_report(report, console, top=args.top)
    if args.json:
        write_analysis_json(args.json, reports)
        console.print(f"[dim]analysis written to {args.json}[/dim]")
    return 0


def _no_blas_threads() -> None:
    """Keep numpy's OpenBLAS from starting a thread per core when it is imported: the
    analysis does no linear algebra, and starting them is 30-60 ms of a 2-core machine's
    start-up. Only in a fresh process (numpy not imported yet) and unless the user set it."""
    import os
    import sys

    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def expand_trace_paths(given: str) -> list[str]:
    """A file as given; a folder as the ``.json``/``.json.gz`` files in it, by name."""
    from pathlib import Path

    from attnprof.errors import UsageError

    path = Path(given)
    if not path.is_dir():
        return [given]
    try:
        found = sorted(str(p) for p in path.iterdir()
                       if p.is_file() and p.name.endswith((".json", ".json.gz")))
    except OSError as exc:
        raise UsageError(f"cannot list folder {given} ({exc.strerror or exc}); check its "
                         "permissions, or pass the trace files themselves") from None
    if not found:
        raise UsageError(f"{given} is a folder with no .json or .json.gz trace in it; pass "
                         "trace files or a folder of them")
    return found
