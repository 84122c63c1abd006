"""``attnprof show RUN``: a stored run (id, unique prefix or label) or a record file,
rendered as the command that made it rendered it. Never imports torch."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.storing import add_store_arguments
from attnprof.exit_codes import ExitCode

NAME = "show"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="show a stored run or a record file",
                       description="Render a stored run (run id, unique prefix of one, or "
                                   "label: the newest run with it) or a record file as the "
                                   "command that made it did.")
    p.add_argument("target", metavar="RUN_OR_FILE",
                   help="a run id, a unique prefix, a label, or a record file (--json output)")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="rows per table (default 15)")
    p.add_argument("--json", action="store_true", help="print the record's JSON instead")
    p.add_argument("--format", choices=("terminal", "json", "csv", "markdown"),
                   default="terminal",
                   help="how to print it: the terminal's tables (default), the record's "
                        "JSON, its CSV lines, or a Markdown summary (the headline, the main "
                        "table, the findings)")
    add_store_arguments(p, saving=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from attnprof.cli.printing import json_for_terminal
    from attnprof.commands.show import ShowRequest
    from attnprof.commands.show import run as find_record
    from attnprof.errors import UsageError
    from attnprof.render import JsonRenderer, TerminalRenderer
    from attnprof.render.runs_table import describe_run
    from attnprof.render.terminal import make_console

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    shown = find_record(ShowRequest(target=args.target, store=args.store))
    record, stored = shown.record, shown.run
    if args.json or args.format == "json":
        sys.stdout.write(json_for_terminal(JsonRenderer().render(record)))
        return ExitCode.OK
    if args.format in ("csv", "markdown"):
        from attnprof.render import RENDERERS

        sys.stdout.write(str(RENDERERS[args.format]().render(record)))
        return ExitCode.OK
    if stored is not None:
        from rich.text import Text

        make_console().print(Text(describe_run(stored), style="dim"))
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(record))
    return ExitCode.OK
