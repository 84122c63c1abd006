"""``attnprof profile VARIANT...``: measure, capture a trace of, and explain each variant.

The comparison runner measures every variant, writes one torch.profiler trace per variant
(``--out``) and analyses each as ``attnprof analyze`` would, with the workload and the
variant's captured warnings as extra evidence. ``--json`` writes the record (kind
``profile``) with each variant's analysis embedded (``VariantResult.analysis``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.outcome import Finished, print_written
from attnprof.cli.parser import csv_list
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.workload_args import add_timing_arguments, add_workload_arguments
from attnprof.exit_codes import ExitCode

NAME = "profile"
#: As :data:`attnprof.commands.profile.DEFAULT_OUT` (not imported: every start-up reads this).
DEFAULT_OUT = "attnprof-traces"
SAVES_RECORDS = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="measure, trace and explain attention variants",
                       description="Measure each variant, capture a torch.profiler trace of it "
                                   "and explain the trace: kernels per forward, op tree, time, "
                                   "memory and findings.")
    p.add_argument("variants", nargs="+", type=csv_list, metavar="VARIANT",
                   help="variant names (or path/to/file.py:callable); see "
                        "'attnprof compare --list-variants'")
    add_workload_arguments(p)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for the traces (default {DEFAULT_OUT})")
    p.add_argument("--steps", type=int, default=3, metavar="N",
                   help="profiled steps (forwards) per trace (default 3)")
    p.add_argument("--json", metavar="PATH",
                   help="write the run record, with each variant's analysis, to PATH")
    add_timing_arguments(p)
    p.add_argument("--top", type=int, default=15, metavar="N", help="rows per table (default 15)")
    add_report_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    from attnprof.cli.planning import plan_measuring
    from attnprof.cli.workload_args import timing_from_args, workload_fields
    from attnprof.commands import profile
    from attnprof.errors import UsageError
    from attnprof.render import TerminalRenderer
    from attnprof.render.progress import CommandProgress
    from attnprof.render.terminal import make_console

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    console = make_console()
    variants = tuple(name for group in args.variants for name in group)
    outputs = plan_measuring(args, variants, kind="profile", json_path=args.json,
                             trace_dir=args.out, trace_flag="--out")
    request = profile.ProfileRequest(
        variants=variants, workload=workload_fields(args), timing=timing_from_args(args),
        out=args.out, steps=args.steps, json=args.json, store=args.store,
        no_store=args.no_store, outputs=tuple(outputs))
    record = profile.run(request, CommandProgress(console))
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(record))
    print_written(console, [("record", args.json)])
    write_reports(args, record, console)
    return Finished(ExitCode.OK, record)
