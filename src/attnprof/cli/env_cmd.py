"""``attnprof env``: this machine's environment and measured ceilings per dtype, cached in
the results store with the date (``--refresh`` measures again). A comparison on the same
host and device reuses the cached ceilings instead of spending a second measuring them.
Without ``--refresh`` and with a cache, torch is not imported."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.parser import csv_list
from attnprof.cli.storing import add_store_arguments
from attnprof.exit_codes import ExitCode

NAME = "env"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="this machine's environment and measured ceilings",
                       description="Show the environment (versions, device, CPU, threads) and "
                                   "this machine's matmul and copy ceilings per dtype, measured "
                                   "once and cached in the results store with the date; "
                                   "comparisons reuse them.")
    p.add_argument("--refresh", action="store_true", help="measure again, and cache the result")
    p.add_argument("--device", help="cpu, cuda or cuda:N (default: every device cached for "
                                    "this host; measuring: cuda when present)")
    p.add_argument("--dtypes", type=csv_list, metavar="LIST",
                   help="dtypes to measure (default float32,bfloat16,float16)")
    p.add_argument("--json", action="store_true", help="print the profile(s) as JSON")
    p.add_argument("--threads", metavar="N|all", default=None,
                   help="intra-op threads to measure the ceilings on (default: as compare "
                        "measures, 1 on CPU); a comparison reuses ceilings measured on its "
                        "own thread count only")
    add_store_arguments(p, saving=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import msgspec

    from attnprof.commands.env import EnvRequest
    from attnprof.commands.env import run as machine_profiles
    from attnprof.render.env_view import render_machine
    from attnprof.render.terminal import make_console

    profiles = machine_profiles(EnvRequest(refresh=args.refresh, device=args.device,
                                           dtypes=args.dtypes, threads=args.threads,
                                           store=args.store), _Notes())
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(profiles)).decode() + "\n")
        return ExitCode.OK
    console = make_console()
    for profile in profiles:
        render_machine(profile, console, cached=not args.refresh)
    return ExitCode.OK


class _Notes:
    """What the command tells as it goes, on stderr."""

    def note(self, text: str) -> None:
        print(f"attnprof: {text}", file=sys.stderr)
