"""``attnprof project RUN --to h100-sxm,mi300x``: what a measured comparison's rows would
take on other hardware — roofline bounds from the datasheet table, projections where the
rows were measured on a device of the target's family, and the largest sequence each
variant's scaled peak fits; a decode comparison's or a model record's KV cache on each
target. Computed, never measured; never imports torch."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnprof.cli.storing import add_store_arguments
from attnprof.exit_codes import ExitCode

NAME = "project"
#: As :data:`attnprof.commands.project.HERE` (not imported: every start-up reads this).
HERE = "here"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(NAME, help="bound a comparison's rows on other hardware",
                       description="For each row of a comparison (a stored run or a record "
                                   "file) and each target device, the roofline bound (the "
                                   "larger of FLOPs / the target's peak for the dtype and "
                                   "traffic / its memory bandwidth), a projection where the "
                                   "rows were measured on a device of the same family, and "
                                   "the largest sequence the variant's peak, scaled, fits "
                                   "in the target's memory; for a decode comparison or a "
                                   "model record, the KV cache per token and the largest "
                                   "context each target fits (a model). See docs/cost.md.")
    p.add_argument("target", metavar="RUN_OR_FILE",
                   help="a run id, a unique prefix, a label, or a record file (--json output)")
    p.add_argument("--to", required=True, metavar="DEVICES",
                   help="comma-separated devices from the table (h100-sxm, h100-pcie, h200, "
                        "a100-80gb, a100-40gb, l4, l40s, b200, mi300x, mi250x) or "
                        f"{HERE!r}: the machine that measured the record, from its ceilings")
    p.add_argument("--devices", metavar="FILE",
                   help="a TOML file of [devices.NAME] tables adding to the shipped table")
    p.add_argument("--memory-budget", metavar="SIZE",
                   help=f"the memory of {HERE!r}, e.g. 8GiB (the table gives the others'); "
                        "without it, no largest sequence is estimated for it")
    p.add_argument("--json", metavar="PATH", help="write the projection (JSON) to PATH")
    add_store_arguments(p, saving=False)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from attnprof.cli.outcome import print_written
    from attnprof.cli.planning import plan_outputs
    from attnprof.commands import project
    from attnprof.outputs import Output
    from attnprof.render.projection_table import render_kv, render_projection
    from attnprof.render.terminal import make_console

    plan = plan_outputs(args, [Output("--json", args.json)] if args.json else [],
                        [args.target] if Path(args.target).is_file() else [])
    result = project.run(project.ProjectRequest(
        target=args.target, to=tuple(args.to.split(",")), devices=args.devices,
        memory_budget=args.memory_budget, store=args.store, json=args.json,
        outputs=tuple(plan)))
    console = make_console()
    if result.workload is not None:
        render_projection(console, result.workload, result.rows, result.targets,
                          result.measured_s)
    if result.kv_shape is not None:
        render_kv(console, result.kv_shape, list(result.kv_fits))
    print_written(console, [("projection", args.json)])
    sys.stdout.flush()
    return ExitCode.OK
