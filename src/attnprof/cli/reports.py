"""The report outputs every command that makes a record shares: ``--html PATH`` (the
self-contained HTML report), ``--markdown PATH`` (the headline, the main table and the
findings, for a CI job summary or a pull request) and ``--plots DIR`` (each figure as PNG
and SVG).

A command adds the flags with :func:`add_report_arguments`; the outputs plan
(:func:`attnprof.cli.planning.plan_outputs`) lists them with the command's others (so they
are checked with the rest before any work), and the command writes them once the record is
finished with :func:`write_reports`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.family import Record


def add_report_arguments(parser: argparse.ArgumentParser | Any) -> None:
    """``--html PATH``, ``--markdown PATH`` and ``--plots DIR``."""
    parser.add_argument("--html", metavar="PATH",
                        help="write a self-contained HTML report (tables, findings, plots, "
                             "the record's JSON) to PATH; opens offline")
    parser.add_argument("--markdown", metavar="PATH",
                        help="write a GitHub-flavoured Markdown summary (the headline, the "
                             "main table, the findings; under 64 KiB) to PATH, e.g. "
                             "$GITHUB_STEP_SUMMARY")
    parser.add_argument("--plots", metavar="DIR",
                        help="write each of the report's figures as PNG and SVG into DIR")


def write_reports(args: argparse.Namespace, record: Record, console: Console) -> None:
    """Write the HTML report, the Markdown summary and the plots asked for, and say
    where."""
    from attnprof.cli.flags import SharedFlags
    from attnprof.cli.outcome import print_written

    flags = SharedFlags.of(args)
    html, markdown, plots = flags.html, flags.markdown, flags.plots
    if markdown:
        from attnprof.render import MarkdownRenderer, write_rendered

        write_rendered(MarkdownRenderer(), record, markdown)
    if html:
        from attnprof.render import HtmlRenderer, write_rendered

        write_rendered(HtmlRenderer(), record, html)
    if plots:
        from attnprof.render.images import write_plots

        write_plots(record, plots)
    print_written(console, [("HTML report", html), ("Markdown summary", markdown),
                            ("plots", plots)])
