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
#: The target that stands for the machine that measured the record: its own ceilings.
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

    from attnprof.analysis.projection import device_target, machine_target, project_record
    from attnprof.cli.planning import plan_outputs
    from attnprof.cli.storing import load_target
    from attnprof.errors import UsageError
    from attnprof.knowledge.devices import device_for_name, load_devices, parse_targets
    from attnprof.outputs import Output, create_folders
    from attnprof.record.compare import CompareRecord
    from attnprof.record.model import ModelRecord
    from attnprof.render.projection_table import projection_data, render_projection
    from attnprof.render.terminal import make_console
    from attnprof.workload.quantities import parse_bytes

    names = list(dict.fromkeys(n.strip().lower() for n in args.to.split(",") if n.strip()))
    table = load_devices(Path(args.devices) if args.devices else None)
    devices = {n: parse_targets(n, table)[0] for n in names if n != HERE}
    if not names:
        raise UsageError("--to names no device; give e.g. --to h100-sxm,mi300x")
    memory = (parse_bytes("--memory-budget", args.memory_budget) if args.memory_budget
              else None)
    create_folders(plan_outputs(args, [Output("--json", args.json)] if args.json else [],
                                [args.target] if Path(args.target).is_file() else []))
    record, _ = load_target(args, args.target)
    console = make_console()
    if isinstance(record, ModelRecord):  # no rows to bound: the KV cache on each target
        data = _kv(console, record, names, devices, memory)
        _write(args, console, {"kind": "projection", "source": args.target,
                               "kv_cache": data})
        return ExitCode.OK
    if not isinstance(record, CompareRecord):
        raise UsageError(f"{args.target!r} is a {record.kind} record; project bounds the "
                         "rows of a compare or profile record, or a model record's KV cache")
    workload = record.workload
    if HERE in names and record.ceilings is None:
        raise UsageError(f"{args.target!r} holds no ceilings to bound {HERE!r} on; give a "
                         "comparison run with its ceilings measured")
    targets = [machine_target(record.ceilings, f"{HERE} ({record.environment.device_name})",
                              memory) if n == HERE and record.ceilings is not None
               else device_target(devices[n], workload.dtype) for n in names]
    measured_on_device = device_for_name(record.environment.device_name, table)
    measured_on = (device_target(measured_on_device, workload.dtype)
                   if measured_on_device is not None else None)
    quadratic = _memory_scaling([r.variant for r in record.results])
    rows = project_record(record.results, workload, targets, quadratic, measured_on)
    measured_s = {r.variant: r.latency_ms.median / 1e3 if r.latency_ms else None
                  for r in record.results}
    render_projection(console, workload, rows, targets, measured_s)
    data = projection_data(args.target, workload, rows, targets)
    if workload.mode == "decode":  # a decode keeps a cache: its size on each target
        from attnprof.analysis.kv_capacity import kv_fit, kv_shape_of_workload
        from attnprof.render.projection_table import kv_data, render_kv

        shape = kv_shape_of_workload(workload)
        fits = [kv_fit(shape, t.name, t.memory_bytes) for t in targets]
        render_kv(console, shape, fits)
        data["kv_cache"] = kv_data(shape, fits)
    _write(args, console, data)
    return ExitCode.OK


def _kv(console: Any, record: Any, names: list[str], devices: dict[str, Any],
        memory: int | None) -> dict[str, Any]:
    """A model record's KV cache per token and the largest context on each target."""
    from attnprof.analysis.kv_capacity import kv_fit, kv_shape_of_model
    from attnprof.errors import UsageError
    from attnprof.render.projection_table import kv_data, render_kv

    m = record.model
    shape = kv_shape_of_model(m.layers, m.kv_heads or m.heads, m.head_dim, m.dtype,
                              m.batch, m.parameters)
    if shape is None:
        raise UsageError(f"the model record's config gives no layers, KV heads or head dim "
                         f"({m.source}); project needs them for its KV cache")
    fits = [kv_fit(shape, n if n != HERE else f"{HERE} ({record.environment.device_name})",
                   memory if n == HERE else devices[n].memory_bytes) for n in names]
    render_kv(console, shape, fits)
    return kv_data(shape, fits)


def _write(args: argparse.Namespace, console: Any, data: dict[str, Any]) -> None:
    import msgspec

    from attnprof.atomic import write_atomic
    from attnprof.cli.outcome import print_written

    if args.json:
        write_atomic(args.json, msgspec.json.format(msgspec.json.encode(data)) + b"\n")
        print_written(console, [("projection", args.json)])
    sys.stdout.flush()


def _memory_scaling(variants: list[str]) -> dict[str, bool | None]:
    """Per variant, whether its memory grows with seq squared (it materialises the scores),
    from the registry; ``None`` for one it does not know (a user's callable)."""
    from attnprof.variants import REGISTRY

    return {v: REGISTRY[v].materializes_scores if v in REGISTRY else None for v in variants}
