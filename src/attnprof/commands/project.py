"""``project``: what a measured comparison's rows would take on other hardware — roofline
bounds from the datasheet table, projections where the rows were measured on a device of
the target's family, and the largest sequence each variant's scaled peak fits. Computed,
never measured; never imports torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnprof.analysis.projection import RowProjection, Target
    from attnprof.outputs import Output
    from attnprof.workload.problem import Workload

__all__ = ["HERE", "ProjectRequest", "Projection", "run"]

#: The target that stands for the machine that measured the record: its own ceilings.
HERE = "here"


@dataclass(frozen=True, slots=True)
class ProjectRequest:
    """What ``attnprof project`` is asked: a comparison and the devices to bound it on."""

    #: A record file, or a stored run (id, unique prefix or label).
    target: str
    #: Devices from the table (``h100-sxm``, ``mi300x`` ...) or :data:`HERE`.
    to: tuple[str, ...]
    #: A TOML file of ``[devices.NAME]`` tables adding to the shipped table.
    devices: str | None = None
    #: The memory of :data:`HERE`, e.g. ``"8GiB"``; ``None``: no largest sequence for it.
    memory_budget: str | None = None
    #: The store a run is looked up in; ``None``: ``$ATTNPROF_STORE``, else the default.
    store: str | None = None
    #: A file for the projection as JSON; ``None``: no file.
    json: str | None = None
    #: Every output of the command line, checked together beforehand; their folders are
    #: made once the devices and sizes asked for are found sound.
    outputs: tuple[Output, ...] = ()


@dataclass(frozen=True, slots=True)
class Projection:
    """The rows of a comparison bounded on each target (not a stored record: it is
    computed again from the run in no time)."""

    source: str
    workload: Workload
    rows: list[RowProjection]
    targets: list[Target]
    #: Each variant's median latency where it was measured, in seconds.
    measured_s: dict[str, float | None]


def run(request: ProjectRequest, progress: None = None) -> Projection:
    """Bound the rows of the comparison ``request.target`` on each of ``request.to``;
    written to ``request.json`` when given. :class:`~attnprof.errors.UsageError` for an
    unknown device, a record that is no comparison, or ``here`` without its ceilings."""
    from pathlib import Path

    from attnprof.analysis.projection import device_target, machine_target, project_record
    from attnprof.commands.saving import load_target
    from attnprof.errors import UsageError
    from attnprof.knowledge.devices import device_for_name, load_devices, parse_targets
    from attnprof.record.compare import CompareRecord
    from attnprof.workload.quantities import parse_bytes

    names = list(dict.fromkeys(n.strip().lower() for n in request.to if n.strip()))
    table = load_devices(Path(request.devices) if request.devices else None)
    devices = {n: parse_targets(n, table)[0] for n in names if n != HERE}
    if not names:
        raise UsageError("--to names no device; give e.g. --to h100-sxm,mi300x")
    memory = (parse_bytes("--memory-budget", request.memory_budget) if request.memory_budget
              else None)
    from attnprof.outputs import Output, create_folders

    create_folders(request.outputs or ([Output("--json", request.json)] if request.json
                                       else []))
    record, _ = load_target(request.target, request.store)
    if not isinstance(record, CompareRecord):
        raise UsageError(f"{request.target!r} is a {record.kind} record; project bounds the "
                         "rows of a compare or profile record")
    workload = record.workload
    if HERE in names and record.ceilings is None:
        raise UsageError(f"{request.target!r} holds no ceilings to bound {HERE!r} on; give a "
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
    projection = Projection(request.target, workload, rows, targets, measured_s)
    if request.json:
        import msgspec

        from attnprof.atomic import write_atomic
        from attnprof.render.projection_table import projection_data

        data = projection_data(request.target, workload, rows, targets)
        write_atomic(request.json, msgspec.json.format(msgspec.json.encode(data)) + b"\n")
    return projection


def _memory_scaling(variants: list[str]) -> dict[str, bool | None]:
    """Per variant, whether its memory grows with seq squared (it materialises the scores),
    from the registry; ``None`` for one it does not know (a user's callable)."""
    from attnprof.variants import REGISTRY

    return {v: REGISTRY[v].materializes_scores if v in REGISTRY else None for v in variants}
