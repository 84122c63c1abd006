"""``attnprof runs``: the runs in the results store, newest first, filtered; ``--rm RUN``
removes one. Never imports torch."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.storing import add_store_arguments
from attnprof.exit_codes import ExitCode

NAME = "runs"
#: The kinds of record the store holds: every kind a command saves (``diff`` saves none).
#: tests/store/test_store_hardening.py holds this to the record family.
STORED_KINDS = ("compare", "profile", "analyze", "check", "model", "sweep", "limits",
                "recommend", "ranks")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="list the runs in the results store",
                       description="List the stored runs, newest first (every command that "
                                   "makes a record stores it), filtered by kind, variant, "
                                   "model, device, label or date.")
    p.add_argument("--kind", choices=STORED_KINDS, help="runs of this kind")
    p.add_argument("--variant", help="runs that measured this variant (or implementation)")
    p.add_argument("--model", help="model runs of this model (gpt2, llama, file.py:factory …)")
    p.add_argument("--device", help="cpu, cuda (any cuda:N) or cuda:N")
    p.add_argument("--label", help="runs saved with this --label")
    p.add_argument("--since", metavar="WHEN",
                   help="made at or after WHEN: 2026-11-30, 2026-11-30T10:00, or an age (7d, "
                        "12h, 30m)")
    p.add_argument("--until", metavar="WHEN", help="made before WHEN (same forms as --since)")
    p.add_argument("--limit", type=int, default=50, metavar="N",
                   help="at most N runs (default 50; 0: all)")
    p.add_argument("--json", action="store_true", help="print the runs as JSON")
    p.add_argument("--rm", metavar="RUN", help="remove the run RUN (id, unique prefix or a "
                                               "label that names one run)")
    add_store_arguments(p, saving=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import msgspec

    from attnprof.cli.printing import json_for_terminal
    from attnprof.commands.runs import RunsRequest
    from attnprof.commands.runs import run as stored_runs
    from attnprof.render.runs_table import render_runs
    from attnprof.render.terminal import make_console

    listing = stored_runs(RunsRequest(kind=args.kind, variant=args.variant, model=args.model,
                                      device=args.device, label=args.label, since=args.since,
                                      until=args.until, limit=args.limit, store=args.store,
                                      remove=args.rm))
    if listing.removed:
        (removed,) = listing.runs
        print(f"removed run {removed.run_id} ({removed.kind}, {removed.created}) from "
              f"{listing.store}")
    elif args.json:
        text = msgspec.json.format(msgspec.json.encode(listing.runs)).decode()
        sys.stdout.write(json_for_terminal(text) + "\n")
    else:
        render_runs(listing.runs, listing.store, make_console())
    return ExitCode.OK
