"""``attnprof report RECORD.json [RECORD.json ...] -o PATH``: one self-contained HTML page
of saved records, one section each (and, with ``--plots DIR``, their figures as images).

Imports no torch. Every record is read before anything is written
(:func:`attnprof.commands.report.load`), so a file that is not a record fails the command
(status 2) with no output; the records read, every file the command will write (the page,
each figure by its final name, in each sub-folder) is planned and checked together
(:mod:`attnprof.cli.planning`), then :func:`attnprof.commands.report.write` writes them.
"""

from __future__ import annotations

import argparse
from typing import Any

from attnprof.exit_codes import ExitCode

NAME = "report"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="make one HTML report of saved records",
                       description="Write one self-contained HTML page (tables, findings, "
                                   "plots, each record's JSON) of the records given, one "
                                   "section each; it opens offline.")
    p.add_argument("records", nargs="+", metavar="RECORD",
                   help="record files written with --json (any kind)")
    p.add_argument("-o", "--output", required=True, metavar="PATH",
                   help="the HTML file to write")
    p.add_argument("--plots", metavar="DIR",
                   help="also write each record's figures as PNG and SVG into DIR "
                        "(one sub-folder per record when there are several)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from attnprof.cli.outcome import print_written
    from attnprof.cli.planning import Figures, plan_outputs
    from attnprof.commands.report import (
        ReportRequest,
        figure_names,
        load,
        plot_folders,
        write,
    )
    from attnprof.outputs import Output, create_folders
    from attnprof.render.terminal import make_console

    args.html = args.output
    request = ReportRequest(records=tuple(args.records), output=args.output, plots=args.plots)
    records = load(request)  # read, not written: first
    folders = plot_folders(request, records)
    names = [figure_names(record) for record in records] if args.plots else []
    # One record: its figures in --plots; several: each in a sub-folder of its own.
    single = Figures(exact=names[0] if len(records) == 1 and names else [])
    subfolders = [] if len(folders) < 2 else [
        Output("--plots", str(folder), folder=True, files=_plot_files(figures))
        for folder, figures in zip(folders, names, strict=True)]
    create_folders(plan_outputs(args, subfolders, args.records, figures=single))
    write(request, records)
    print_written(make_console(), [("HTML report", args.output), ("plots", args.plots)])
    return ExitCode.OK


def _plot_files(names: list[str]) -> tuple[str, ...]:
    from attnprof.render.images import plot_files

    return plot_files(names)
