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
#: The dtypes measured by default: what attention runs in.
DEFAULT_DTYPES = ("float32", "bfloat16", "float16")


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
                   help=f"dtypes to measure (default {','.join(DEFAULT_DTYPES)})")
    p.add_argument("--json", action="store_true", help="print the profile(s) as JSON")
    p.add_argument("--threads", metavar="N|all", default=None,
                   help="intra-op threads to measure the ceilings on (default: as compare "
                        "measures, 1 on CPU); a comparison reuses ceilings measured on its "
                        "own thread count only")
    add_store_arguments(p, saving=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import platform

    import msgspec

    from attnprof.render.env_view import render_machine
    from attnprof.render.terminal import make_console
    from attnprof.store import open_store, store_path
    from attnprof.workload.problem import canonical_dtype
    from attnprof.workload.settings import parse_threads

    dtypes = [canonical_dtype(d) for d in (args.dtypes or DEFAULT_DTYPES)]  # before any work
    if args.threads is not None:
        parse_threads(args.threads)  # before any work
    path = store_path(args.store)
    assert path is not None
    host = platform.node() or "unknown"
    with open_store(path, create=False) as store:  # checked now; made only to save into
        profiles = [] if args.refresh else store.machines(host, args.device)
    if not profiles:
        profile = _measure(args, dtypes)
        with open_store(path, create=True) as store:
            store.save_machine(host, profile.environment.device, profile)
        profiles = [profile]
    if args.json:
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(profiles)).decode() + "\n")
        return ExitCode.OK
    console = make_console()
    for profile in profiles:
        render_machine(profile, console, cached=not args.refresh)
    return ExitCode.OK


def _measure(args: argparse.Namespace, dtypes: list[str]) -> Any:
    from attnprof.cli.workload_args import threads_from_args
    from attnprof.measure.device import check_device, check_dtype, default_device
    from attnprof.measure.machine import measure_machine
    from attnprof.measure.threads import measuring_threads

    device = args.device or default_device()
    threads = threads_from_args(args, device)
    check_device(device)
    for dtype in dtypes:
        check_dtype(device, dtype)
    print(f"attnprof: measuring this machine's ceilings on {device} "
          f"({', '.join(dtypes)}) …", file=sys.stderr)
    with measuring_threads(threads):
        return measure_machine(device, dtypes)
