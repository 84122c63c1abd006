"""``attnprof diff A B``: what changed between two runs (stored runs, record files) or two
traces (files or folders), judged with statistics; ``--fail-on-regression PCT`` makes it
a CI gate. Exit status: 0; 1 when the gate finds a regression; 2 for a user mistake.
Never imports torch."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.storing import add_store_arguments
from attnprof.exit_codes import ExitCode

NAME = "diff"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="compare two runs or two traces: what changed, and whether "
                                  "it is more than noise",
                       description="Compare OLD with NEW: stored runs (id, unique prefix, "
                                   "label), record files, or two traces / trace folders. Rows "
                                   "are matched by variant (sweep point, model phase); latency "
                                   "is judged by a two-sided Mann-Whitney U test on the raw "
                                   "samples or, when both sides were measured with "
                                   "--processes, by Welch's t-test on the processes' medians "
                                   "(each process's speed taken out), Holm-corrected across "
                                   "rows ('~': no significant change).")
    p.add_argument("old", metavar="OLD", help="run id, prefix, label, record file, trace or "
                                              "folder of traces")
    p.add_argument("new", metavar="NEW", help="the same kinds as OLD")
    p.add_argument("--fail-on-regression", metavar="PCT",
                   help="exit 1 when a row got significantly slower, or its peak memory grew, "
                        "by more than PCT percent, or it broke (e.g. 5)")
    p.add_argument("--allow-workload-change", action="store_true",
                   help="gate (--fail-on-regression) runs of different workloads; without "
                        "it, such a gate is refused: their rows measure different work")
    p.add_argument("--json", metavar="PATH", help="write the diff record (JSON) to PATH")
    p.add_argument("--csv", metavar="PATH", help="write one CSV line per row and metric")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="changed kernels and ops shown per region (default 15)")
    add_report_arguments(p)
    add_store_arguments(p, saving=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from attnprof.analysis.diff.gate import blind_rows, not_judged, regressions
    from attnprof.cli.outcome import print_written
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.commands.diff import DiffRequest
    from attnprof.commands.diff import run as diff_runs
    from attnprof.errors import UsageError
    from attnprof.outputs import Output, create_folders
    from attnprof.render import CsvRenderer, JsonRenderer, TerminalRenderer, write_rendered
    from attnprof.render.diff_view import render_gate
    from attnprof.render.terminal import make_console
    from attnprof.workload.quantities import parse_percent

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    percent = (parse_percent("--fail-on-regression", args.fail_on_regression)
               if args.fail_on_regression is not None else None)
    outputs = [Output(flag, path) for flag, path in (("--json", args.json),
                                                     ("--csv", args.csv)) if path is not None]
    create_folders(plan_outputs(args, outputs, [p for p in (args.old, args.new) if _is_file(p)],
                                figures=Figures("diff")))
    # A gate refused (different workloads, nothing judged) is raised here, before anything
    # is written: a refusal leaves nothing.
    diff = diff_runs(DiffRequest(old=args.old, new=args.new, store=args.store,
                                 fail_on_regression=percent,
                                 allow_workload_change=args.allow_workload_change))
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(diff))
    if args.json:
        write_rendered(JsonRenderer(), diff, args.json)
    if args.csv:
        write_rendered(CsvRenderer(), diff, args.csv)
    console = make_console()
    print_written(console, [("diff", args.json), ("CSV", args.csv)])
    write_reports(args, diff, console)
    if percent is None:
        return ExitCode.OK
    found = regressions(diff, percent)
    render_gate(found, percent, console, blind=len(blind_rows(diff, percent)),
                unjudged=len(not_judged(diff)))
    return ExitCode.FAILED if found else ExitCode.OK


def _is_file(path: str) -> bool:
    import os

    return os.path.isfile(path)
