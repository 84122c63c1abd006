"""``attnprof sweep``: compare variants at every point of a grid of workloads.

Each point runs in a worker (``--executor process``, the default) or a Ray task, so an
OOM, a crash or a hang is that point's status and the sweep goes on. The record is saved
after every point (``--json``); ``--resume RECORD`` runs only what is missing. Exit
status: 0; 1 when ``--budgets`` finds a budget broken; 2 for a user mistake; 3 when a row
crashed, erred or timed out (every result is kept; ``--resume`` reruns the timed-out and
killed ones).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.config_args import add_from_config_argument, apply_from_config
from attnprof.cli.outcome import Finished
from attnprof.cli.pricing import add_price_arguments
from attnprof.cli.reports import add_report_arguments
from attnprof.cli.sweep_args import add_grid_arguments, add_run_arguments

NAME = "sweep"
SAVES_RECORDS = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="compare variants over a grid of shapes; fit how they scale",
                       description="Run a comparison at every point of a grid of workloads "
                                   "(lists and ranges of any field), each point isolated in a "
                                   "worker; fit latency and memory exponents.")
    add_grid_arguments(p)
    add_from_config_argument(p)
    p.add_argument("--json", metavar="PATH",
                   help="write the sweep record to PATH, saved after every point")
    p.add_argument("--resume", metavar="RECORD",
                   help="continue the sweep in RECORD: run only its missing points (and "
                        "those stopped by a timeout or a signal); saved back to RECORD "
                        "unless --json names another file")
    p.add_argument("--csv", metavar="PATH", help="write one CSV line per point and variant")
    p.add_argument("--plot", metavar="FILE.svg|png",
                   help="plot latency and peak memory against the first swept size, log-log")
    p.add_argument("--budgets", metavar="FILE",
                   help="check every point against a budgets file (TOML); exit 1 if any fails")
    add_report_arguments(p)
    add_price_arguments(p)
    add_run_arguments(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> Finished:
    from attnprof.cli.pricing import say_unpriced
    from attnprof.cli.sweeping import finish_outputs, sweep_request
    from attnprof.commands import sweep
    from attnprof.render import TerminalRenderer
    from attnprof.render.progress import SweepProgress
    from attnprof.render.terminal import make_console

    apply_from_config(args, text=True)
    request = sweep_request(args)
    record = sweep.run(request, SweepProgress)
    console = make_console()
    say_unpriced(console, request.price, record, record.environment.device_name,
                 record.base.device_type)
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    return Finished(finish_outputs(args, record, console), record)
