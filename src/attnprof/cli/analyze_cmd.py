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
import sys
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
    from attnprof.analysis.analyze import analyze_files
    from attnprof.atomic import check_writable
    from attnprof.errors import UsageError
    from attnprof.render import TerminalRenderer
    from attnprof.render.terminal import make_console

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
    record = analyze_files(paths, region_pattern=args.region)
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(record))
    console = make_console()
    if args.json:
        record.save(args.json)
        console.print(f"[dim]analysis written to {args.json}[/dim]")
    return 0


def expand_trace_paths(given: str) -> list[str]:
    """A file as given; a folder as the ``.json``/``.json.gz`` files in it, by name."""
    from pathlib import Path

    from attnprof.errors import UsageError

    path = Path(given)
    if not path.is_dir():
        return [given]
    found = sorted(str(p) for p in path.iterdir()
                   if p.is_file() and p.name.endswith((".json", ".json.gz")))
    if not found:
        raise UsageError(f"{given} is a folder with no .json or .json.gz trace in it; pass "
                         "trace files or a folder of them")
    return found
