"""``project``: what a measured comparison's rows would take on other hardware — roofline
bounds from the datasheet table, projections where the rows were measured on a device of
the target's family, and the largest sequence each variant's scaled peak fits; for a decode
comparison or a model record, the KV cache per token and the largest context each target
holds. Computed, never measured; never imports torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnprof.analysis.kv_capacity import KvFit, KvShape
    from attnprof.analysis.projection import RowProjection, Target
    from attnprof.outputs import Output
    from attnprof.record.model import ModelRecord
    from attnprof.workload.problem import Workload

__all__ = ["HERE", "ProjectRequest", "Projection", "projection_json", "run"]

#: The target that stands for the machine that measured the record: its own ceilings.
HERE = "here"


@dataclass(frozen=True, slots=True)
class ProjectRequest:
    """What ``attnprof project`` is asked: a comparison (or a model record) and the devices
    to bound it on."""

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

    def __post_init__(self) -> None:
        """A program's mistakes in the fields, one line each (:mod:`.fields`)."""
        from attnprof.commands.fields import set_names

        set_names(self, "to")


@dataclass(frozen=True, slots=True)
class Projection:
    """The rows of a comparison bounded on each target, and the KV cache a decode or a
    model keeps on each (not a stored record: it is computed again from the run in no
    time)."""

    source: str
    #: The comparison's workload; ``None`` for a model record (no rows to bound).
    workload: Workload | None
    rows: list[RowProjection]
    targets: list[Target]
    #: Each variant's median latency where it was measured, in seconds.
    measured_s: dict[str, float | None]
    #: The KV cache's shape (a decode comparison, a model record); ``None`` otherwise.
    kv_shape: KvShape | None = None
    #: Per target, the largest context its memory holds for that cache.
    kv_fits: tuple[KvFit, ...] = ()


def run(request: ProjectRequest, progress: None = None) -> Projection:
    """Bound the rows of the comparison ``request.target`` on each of ``request.to`` (for
    a decode, with its KV cache on each; for a model record, its KV cache alone); written
    to ``request.json`` when given. :class:`~attnprof.errors.UsageError` for an
    unknown device, a record that is no comparison, or ``here`` without its ceilings."""
    from pathlib import Path

    from attnprof.analysis.projection import device_target, machine_target, project_record
    from attnprof.commands.saving import load_target
    from attnprof.errors import UsageError
    from attnprof.knowledge.devices import device_for_name, load_devices, parse_targets
    from attnprof.record.compare import CompareRecord
    from attnprof.record.model import ModelRecord
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
    if isinstance(record, ModelRecord):  # no rows to bound: the KV cache on each target
        model_shape, model_fits = _model_kv(record, names, devices, memory)
        projection = Projection(request.target, None, [], [], {}, model_shape,
                                tuple(model_fits))
        return _written(projection, request.json)
    if not isinstance(record, CompareRecord):
        raise UsageError(f"{request.target!r} is a {record.kind} record; project bounds the "
                         "rows of a compare or profile record, or a model record's KV cache")
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
    shape: KvShape | None = None
    fits: list[KvFit] = []
    if workload.mode == "decode":  # a decode keeps a cache: its size on each target
        from attnprof.analysis.kv_capacity import kv_fit, kv_shape_of_workload

        shape = kv_shape_of_workload(workload)
        fits = [kv_fit(shape, t.name, t.memory_bytes) for t in targets]
    return _written(Projection(request.target, workload, rows, targets, measured_s, shape,
                               tuple(fits)), request.json)


def projection_json(projection: Projection) -> dict[str, Any]:
    """The projection as plain data for ``--json``: every figure labelled for what it is."""
    from attnprof.render.projection_table import kv_data, projection_data

    data: dict[str, Any] = ({"kind": "projection", "source": projection.source}
                            if projection.workload is None else
                            projection_data(projection.source, projection.workload,
                                            projection.rows, projection.targets))
    if projection.kv_shape is not None:
        data["kv_cache"] = kv_data(projection.kv_shape, projection.kv_fits)
    return data


def _written(projection: Projection, json_path: str | None) -> Projection:
    """``projection``, written to ``json_path`` (atomically) when one is given."""
    if json_path:
        import msgspec

        from attnprof.atomic import write_atomic

        write_atomic(json_path, msgspec.json.format(msgspec.json.encode(
            projection_json(projection))) + b"\n")
    return projection


def _model_kv(record: ModelRecord, names: list[str], devices: dict[str, Any],
              memory: int | None) -> tuple[KvShape, list[KvFit]]:
    """A model record's KV cache per token and the largest context on each target."""
    from attnprof.analysis.kv_capacity import kv_fit, kv_shape_of_model
    from attnprof.errors import UsageError

    m = record.model
    shape = kv_shape_of_model(m.layers, m.kv_heads or m.heads, m.head_dim, m.dtype,
                              m.batch, m.parameters)
    if shape is None:
        raise UsageError(f"the model record's config gives no layers, KV heads or head dim "
                         f"({m.source}); project needs them for its KV cache")
    fits = [kv_fit(shape, n if n != HERE else f"{HERE} ({record.environment.device_name})",
                   memory if n == HERE else devices[n].memory_bytes) for n in names]
    return shape, fits


def _memory_scaling(variants: list[str]) -> dict[str, bool | None]:
    """Per variant, whether its memory grows with seq squared (it materialises the scores),
    from the registry; ``None`` for one it does not know (a user's callable)."""
    from attnprof.variants import REGISTRY

    return {v: REGISTRY[v].materializes_scores if v in REGISTRY else None for v in variants}
