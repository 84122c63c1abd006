"""``attnprof show RECORD.json``: print a record as the command that made it printed it.

Any record kind (compare, profile, analyze, model, sweep, check, limits, recommend); no
torch is imported, so it takes a fraction of a second. Exit status 0, or 2 for a file
that is not a record.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

NAME = "show"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="print a saved record as its command printed it",
                       description="Print a record written with --json (any kind) exactly "
                                   "as the command that made it printed it, without "
                                   "running anything.")
    p.add_argument("record", metavar="RECORD", help="a record file written with --json")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="rows per trace table (default 15, as analyze and profile)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from attnprof.errors import UsageError
    from attnprof.record.family import load_record
    from attnprof.render.terminal import TerminalRenderer

    if args.top <= 0:
        raise UsageError(f"--top must be a positive integer, got {args.top}")
    record = load_record(args.record)
    sys.stdout.write(TerminalRenderer.for_stdout(top=args.top).render(record))
    return 0
