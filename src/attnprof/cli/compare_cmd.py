"""``attnprof compare``: measure attention variants side by side (the default command)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from attnprof.cli.config_args import add_from_config_argument, apply_from_config
from attnprof.cli.outcome import Finished, budget_status, print_written, rows_status
from attnprof.cli.paged_args import add_block_size_argument, apply_block_sizes
from attnprof.cli.parser import csv_list
from attnprof.cli.precision_args import add_precision_arguments, precision_fields
from attnprof.cli.pricing import add_price_arguments
from attnprof.cli.reports import add_report_arguments, write_reports
from attnprof.cli.workload_args import add_timing_arguments, add_workload_arguments
from attnprof.exit_codes import ExitCode

if TYPE_CHECKING:
    from attnprof.commands.compare import CompareRequest

NAME = "compare"
SAVES_RECORDS = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="measure attention variants side by side (default)",
                       description="Measure attention variants side by side on one workload.")
    add_workload_arguments(p)
    p.add_argument("--variants", "-v", type=csv_list, action="extend",
                   help="comma-separated variant names or path/to/file.py:callable "
                        "(default: all built-in but the opt-in paged and third-party "
                        "ones); see --list-variants")
    p.add_argument("--list-variants", action="store_true", help="list variants and exit")
    add_block_size_argument(p)
    add_from_config_argument(p)
    add_precision_arguments(p)
    p.add_argument("--json", metavar="PATH", help="write the run record (JSON) to PATH")
    p.add_argument("--csv", metavar="PATH",
                   help="write one CSV line per variant (with the workload's fields) to PATH")
    add_timing_arguments(p)
    p.add_argument("--trace", metavar="DIR",
                   help="also write a torch.profiler trace (.json.gz) of each variant to DIR")
    p.add_argument("--trace-steps", type=int, default=3, metavar="N",
                   help="profiled steps per trace (default 3)")
    p.add_argument("--budgets", metavar="FILE",
                   help="check the rows against a budgets file (TOML); exit 1 if any fails")
    add_report_arguments(p)
    add_price_arguments(p)
    p.set_defaults(run=run)


def request_of(args: argparse.Namespace) -> CompareRequest:
    """The request the flags make (the flags' own mistakes: one line, exit 2)."""
    from attnprof.cli.planning import plan_measuring
    from attnprof.cli.pricing import price_request
    from attnprof.cli.workload_args import timing_from_args, workload_fields
    from attnprof.commands.compare import CompareRequest
    from attnprof.outputs import Output

    apply_block_sizes(args)
    apply_from_config(args, text=False)
    variants = tuple(args.variants or ())
    outputs = plan_measuring(args, variants, kind="compare", json_path=args.json,
                             trace_dir=args.trace,
                             other_outputs=([Output("--csv", args.csv)] if args.csv is not None
                                            else []),
                             other_inputs=[args.budgets] if args.budgets else [])
    return CompareRequest(
        variants=variants, workload={**workload_fields(args), **precision_fields(args)},
        timing=timing_from_args(args), json=args.json, trace_dir=args.trace,
        trace_steps=args.trace_steps, budgets=args.budgets,
        price=price_request(args),  # a bad price fails before anything is measured
        store=args.store, no_store=args.no_store, outputs=tuple(outputs))


def run(args: argparse.Namespace) -> int | Finished:
    from attnprof.commands import compare
    from attnprof.render import CsvRenderer, TerminalRenderer, write_rendered
    from attnprof.render.progress import CommandProgress
    from attnprof.render.terminal import make_console

    console = make_console()
    if args.list_variants:
        from attnprof.render.compare_table import render_variant_list
        from attnprof.variants import OPT_IN, REGISTRY

        render_variant_list([*REGISTRY.values(), *OPT_IN.values()], console)
        return ExitCode.OK
    record = compare.run(request_of(args), CommandProgress(console))
    if args.csv:
        write_rendered(CsvRenderer(), record, args.csv)
    sys.stdout.write(TerminalRenderer.for_stdout().render(record))
    print_written(console, [("record", args.json), ("CSV", args.csv)])
    write_reports(args, record, console)
    return Finished(budget_status(record) or rows_status(r.status for r in record.results),
                    record)
