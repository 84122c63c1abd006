"""``attnprof analyze TRACE...``: explain torch.profiler traces, without importing torch.

Each trace is loaded, analysed (regions, kernels per forward, op tree, time, memory,
findings) and printed. A folder stands for the traces in it (``*.json``, ``*.json.gz``, in
name order), as written by ``compare --trace`` or one file per rank by a distributed run;
attnprof's own records in it (an earlier ``--json`` written there) are not traces and are
left out, told by content. Every trace is read and analysed before anything is printed or
written, so an unreadable file named on the command line fails the command at once, with
no output file (status 2); an unreadable file in a folder is reported and the rest are
analysed, printed and written, with exit status 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from attnprof.cli.outcome import print_written
from attnprof.cli.reports import add_report_arguments, report_outputs, write_reports

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
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    _no_blas_threads()
    # Large numpy arrays from malloc's heap, freed memory kept for the next one: each array
    # above glibc's mmap threshold would otherwise get fresh pages to fault in (analysis is
    # a quarter faster on a 1 GiB trace; 18 ms of the 0.4 s of a 50 MB one). The same state
    # compare uses by default; only this short-lived process is affected.
    from attnprof.measure.allocator import set_cpu_allocator

    set_cpu_allocator("reuse")  # elsewhere than glibc it says why; analyze runs on regardless

    from attnprof.analysis.analyze import analyze_files
    from attnprof.errors import UsageError
    from attnprof.formatting import safe_text
    from attnprof.outputs import Output, check_outputs
    from attnprof.render import TerminalRenderer
    from attnprof.render.terminal import make_console

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    if args.region is not None:
        try:
            re.compile(args.region)
        except re.error as exc:
            raise UsageError(f"--region {args.region!r} is not a regular expression ({exc})"
                             ) from None
    paths = [p for given in args.traces for p in expand_trace_paths(given)]
    in_folders = {p for p in paths if p not in args.traces}
    check_outputs([*([Output("--json", args.json)] if args.json is not None else []),
                   *report_outputs(args)], paths)
    record = analyze_files(paths, region_pattern=args.region, optional=in_folders)
    if not record.reports:  # every file found was unreadable: nothing to show or write
        raise UsageError(f"no trace could be read: {record.unreadable[0].source}: "
                         f"{record.unreadable[0].reason}")
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(record))
    console = make_console()
    if args.json:
        record.save(args.json)
        print_written(console, [("analysis", args.json)])
    write_reports(args, record, console)
    if record.unreadable:
        files = ", ".join(safe_text(bad.source) for bad in record.unreadable)
        print(f"attnprof: {len(record.unreadable)} file(s) could not be read as traces and "
              f"were skipped (reasons above): {files}", file=sys.stderr)
        return 1
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
    """A file as given; a folder as the ``.json``/``.json.gz`` files in it, by name,
    attnprof's own records left out."""
    from pathlib import Path

    from attnprof.errors import UsageError

    path = Path(given)
    if not path.is_dir():
        return [given]
    from attnprof.record.family import is_record_file

    try:
        found = sorted(str(p) for p in path.iterdir()
                       if p.is_file() and p.name.endswith((".json", ".json.gz"))
                       and not is_record_file(p))
    except OSError as exc:
        raise UsageError(f"cannot list folder {given} ({exc.strerror or exc}); check its "
                         "permissions, or pass the trace files themselves") from None
    if not found:
        raise UsageError(f"{given} is a folder with no .json or .json.gz trace in it; pass "
                         "trace files or a folder of them")
    return found
