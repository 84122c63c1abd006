"""``attnprof report RECORD.json [RECORD.json ...] -o PATH``: one self-contained HTML page
of saved records, one section each (and, with ``--plots DIR``, their figures as images).

Imports no torch. Every record is read before anything is written, so a file that is not
a record fails the command (status 2) with no output.
"""

from __future__ import annotations

import argparse
from typing import Any

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
    from pathlib import Path

    from attnprof.cli.outcome import print_written
    from attnprof.cli.reports import report_outputs
    from attnprof.outputs import check_outputs
    from attnprof.record.family import load_record
    from attnprof.render.html import render_html
    from attnprof.render.images import write_plots
    from attnprof.render.terminal import make_console

    args.html = args.output
    check_outputs(report_outputs(args), inputs=args.records)
    records = [load_record(path) for path in args.records]
    from attnprof.atomic import write_atomic

    write_atomic(args.output, render_html(records).encode())
    if args.plots:
        for i, record in enumerate(records):
            folder = Path(args.plots) / f"{i + 1}-{record.kind}" if len(records) > 1 \
                else Path(args.plots)
            write_plots(record, folder)
    print_written(make_console(), [("HTML report", args.output), ("plots", args.plots)])
    return 0
