"""Run a sweep: a comparison at every point of a grid, each point through an executor.

A sweep point *is* a comparison of one workload (a :class:`~attnprof.run.point.Point`), so
everything a comparison measures and records, a sweep point does too. The sweep adds what
only a grid can know:

* **Inferred out of memory.** Once a variant runs out of memory at a point, every later
  point at least as large in every swept field (:func:`~attnprof.workload.grid.covers`) records
  that variant as ``skipped`` with the point that implied it, instead of running it. Points
  run from small to large, so this also holds when the very first point fails.
* **Shapes that cannot fit at all** (q/k/v/output alone beyond the device's memory) are
  ``oom`` rows without a run, where a comparison would refuse the command.
* **Durable, resumable results.** ``on_point`` sees the record after every finished point
  (the CLI saves it atomically); a resumed sweep keeps every point whose rows are final
  and runs only the rest (:func:`~attnprof.record.sweep.needs_rerun`).

The executor decides where points run (:meth:`~attnprof.run.executors.Executor.run_points`).
Local executors run them one after another; one that runs several at once (Ray) hands each
back as it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from attnprof.errors import UsageError
from attnprof.formatting import format_bytes
from attnprof.measure.device import check_device, check_dtype, memory_shortfall
from attnprof.measure.environment import collect_environment
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.record.environment import Ceilings, Environment
from attnprof.record.sweep import SweepPoint, SweepRecord, WorkerLimits, needs_rerun
from attnprof.run.point import Point
from attnprof.run.rows import NOT_RUN, status_row
from attnprof.variants import Variant, resolve_variants
from attnprof.workload import costs
from attnprof.workload.grid import Coords, Grid, covers, describe_coords
from attnprof.workload.problem import Workload, default_workload
from attnprof.workload.settings import Settings

if TYPE_CHECKING:
    from attnprof.run.executors import Executor, Job

__all__ = ["SweepPlan", "SweepProgress", "check_resumable", "plan_sweep", "run_sweep"]


class SweepProgress(Protocol):
    """What a sweep reports while it runs (the CLI's progress bar implements it)."""

    def point_started(self, index: int, coords: Coords) -> None: ...
    def phase(self, variant: str, phase: str) -> None: ...
    def point_done(self, point: SweepPoint) -> None: ...


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: the base workload, the grid over it, the variants, the settings."""

    base: Workload
    grid: Grid
    variants: tuple[str, ...]
    settings: Settings
    #: Workload fields the user set (beside the grid); the base is the device default
    #: with these applied.
    fields: tuple[tuple[str, Any], ...] = ()
    #: Where the points run (the executor's name) and under which limits: the executor
    #: is built from these, and the record keeps them.
    executor: str = "process"
    limits: WorkerLimits = field(default_factory=WorkerLimits)

    def workload(self, coords: Coords) -> Workload:
        """The validated workload of the point at ``coords``."""
        fields = {**dict(self.fields), **coords}
        try:
            return default_workload(self.base.device_type, device=self.base.device,
                                    **fields).validate()
        except UsageError as exc:
            raise UsageError(f"sweep point {describe_coords(coords)}: {exc}") from None


def plan_sweep(grid: Grid, variants: Sequence[str | Variant] | None, settings: Settings,
               device: str, *, executor: str = "process",
               limits: WorkerLimits | None = None,
               **fields: Any) -> tuple[SweepPlan, list[Variant]]:
    """Check everything a user can get wrong before any point runs: the variants resolve,
    the device and dtypes exist, every point's workload is valid, the grid is not absurd."""
    chosen = resolve_variants(variants)
    grid.check_size(len(chosen))
    fields = {k: v for k, v in fields.items() if v is not None and k not in grid.fields}
    check_device(device)
    plan = SweepPlan(base=default_workload(device.split(":")[0], device=device, **fields),
                     grid=grid, variants=tuple(v.name for v in chosen),
                     settings=settings.validate(), fields=tuple(sorted(fields.items())),
                     executor=executor, limits=limits or WorkerLimits())
    workloads = [plan.workload(c) for c in grid.points()]  # each point valid, or say which
    for dtype in dict.fromkeys(w.dtype for w in workloads):
        check_dtype(device, dtype)
    # The base is the first point: the grid's fields then take each point's values.
    return replace(plan, base=workloads[0]), chosen


def new_record(plan: SweepPlan) -> SweepRecord:
    """An empty sweep record for ``plan``, with this machine's environment."""
    return SweepRecord(environment=collect_environment(plan.base.device),
                       base=plan.base.resolved(), fields=dict(plan.fields), grid=plan.grid,
                       variants=list(plan.variants), settings=plan.settings,
                       flops_convention=costs.FLOPS_CONVENTION, executor=plan.executor,
                       limits=plan.limits)


#: What a resumed sweep must share with its record, and how a mismatch is named.
_RESUMED = {"variants": "variants differ", "grid": "grid differs", "base": "base differs",
            "settings": "settings differ", "executor": "executor differs",
            "limits": "limits differ"}


def check_resumable(record: SweepRecord, plan: SweepPlan, environment: Environment) -> None:
    """Refuse (one line) to resume ``record`` with a different sweep or machine."""
    here = (f"{record.run_id}: resume it with the command that started it, on the machine "
            "it ran on, or start a new sweep")
    asked = {"variants": list(plan.variants), "grid": plan.grid, "base": plan.base.resolved(),
             "settings": plan.settings, "executor": plan.executor, "limits": plan.limits}
    for name, value in asked.items():
        then = getattr(record, name)
        if then is not None and then != value:  # limits: None in records that predate them
            raise UsageError(f"--resume: this command's {_RESUMED[name]} from the record's "
                             f"({_show(value)} here, {_show(then)} in {here})")
    for name in ("attnprof", "python", "torch", "cuda", "cudnn", "device", "device_name",
                 "cpu_model", "threads"):
        then, now = getattr(record.environment, name), getattr(environment, name)
        if then != now:
            raise UsageError(f"--resume: the environment differs ({name} {now!r} here, "
                             f"{then!r} in {here})")


def _show(value: Any) -> str:
    if isinstance(value, Grid):
        return " ".join(f"{a.field}={','.join(map(str, a.values))}" for a in value.axes) or "-"
    if isinstance(value, Workload):
        return value.describe()
    if isinstance(value, Settings):
        return (f"min-time {value.plan.min_time_s:g} s, rounds {value.plan.rounds}, "
                f"seed {value.seed}, cpu-allocator {value.cpu_allocator}")
    if isinstance(value, WorkerLimits):
        timeout, memory = value.point_timeout_s, value.worker_memory_bytes
        return (f"--point-timeout {'none' if timeout is None else f'{timeout:g} s'}, "
                f"--worker-memory {'none' if memory is None else format_bytes(memory)}")
    return ",".join(value) if isinstance(value, list) else str(value)


def run_sweep(plan: SweepPlan, executor: Executor, *, record: SweepRecord | None = None,
              on_point: Callable[[SweepRecord], None] | None = None,
              progress: SweepProgress | None = None) -> SweepRecord:
    """Run every point of ``plan`` not already final in ``record`` and return the record,
    its points in the order they finished (:meth:`SweepRecord.ordered_points` sorts)."""
    from attnprof.analysis.scaling import analyse_sweep

    record = record or new_record(plan)
    record.status = "partial"  # until the last point is in (a resumed record said complete)
    if record.limits is None:  # a record from before limits were kept: these ran it now
        record.limits = plan.limits
    # A resumed point keeps every row that is its variant's answer and reruns only the
    # others (needs_rerun); it stays in the record as it was until they are in.
    redo = {p.index: p for p in record.points if any(map(needs_rerun, p.results))}
    done = {p.index for p in record.points} - set(redo)
    # A remote executor's points run on other machines, each measuring its own ceilings.
    state = _State(plan, record, progress, share_ceilings=not executor.remote)
    for point in record.ordered_points():
        state.learn(point)
    pending = [(i, c) for i, c in enumerate(plan.grid.points()) if i not in done]

    def next_job() -> Job | None:
        while pending:
            index, coords = pending.pop(0)
            job = state.prepare(index, coords, redo.get(index))
            if job is not None:
                return job
            if on_point is not None:
                on_point(record)
        return None

    def on_done(index: int, result: CompareRecord, node: str | None) -> None:
        state.finish(index, result, node)
        if on_point is not None:
            on_point(record)

    executor.run_points(next_job, on_done, progress.phase if progress else None)
    final = analyse_sweep(record)
    final.status = "complete"
    if on_point is not None:
        on_point(final)
    return final


class _State:
    """What the sweep knows while it runs: where each variant ran out of memory, the
    ceilings measured so far, and when each running point started."""

    def __init__(self, plan: SweepPlan, record: SweepRecord, progress: SweepProgress | None,
                 *, share_ceilings: bool) -> None:
        self.plan, self.record, self.progress = plan, record, progress
        self.share_ceilings = share_ceilings
        self.oom_at: dict[str, list[tuple[int, Coords]]] = {}
        self.ceilings: dict[str, Ceilings] = {}
        self.running: dict[int, _Running] = {}
        self.variants = {v.name: v for v in resolve_variants(plan.variants)}

    def learn(self, point: SweepPoint) -> None:
        """Remember what a finished point says about the points after it."""
        for row in point.results:
            if row.status == "oom":
                self.oom_at.setdefault(row.variant, []).append((point.index, point.coords))
        if point.ceilings is not None:
            self.ceilings.setdefault(point.workload.dtype, point.ceilings)

    def prepare(self, index: int, coords: Coords, kept: SweepPoint | None = None
                ) -> Job | None:
        """The job for this point, or ``None`` when nothing in it needs running (every
        variant inferred out of memory, or the shape cannot fit): then the point is
        recorded here and now. ``kept``: the point as a resumed record has it; its rows
        that are answers stay, and only the other variants run."""
        workload = self.plan.workload(coords)
        if self.progress is not None:
            self.progress.point_started(index, coords)
        rows = [r for r in kept.results if not needs_rerun(r)] if kept else []
        answered = {r.variant for r in rows}
        inferred = {name: at for name in self.plan.variants if name not in answered
                    and (at := self._implied_oom(name, coords)) is not None}
        to_run = tuple(v for v in self.plan.variants if v not in inferred and v not in answered)
        self.running[index] = _Running(coords, workload, inferred, time.monotonic(), kept, rows)
        short = memory_shortfall(costs.resident_bytes(workload), workload.device)
        if to_run and short is None:
            ceilings = kept.ceilings if kept else None  # the kept rows' shares use them
            if ceilings is None and self.share_ceilings:
                ceilings = self.ceilings.get(workload.dtype)
            return index, Point(workload=workload, variants=to_run,
                                settings=self.plan.settings, ceilings=ceilings)
        new_rows = []
        if short is not None:
            reason = (f"{NOT_RUN}q/k/v/output alone need about {short[0]}, {short[1]}; "
                      "use a smaller shape")
            new_rows = [status_row(self.variants[v], "oom", reason) for v in to_run]
        self._append(index, new_rows, None, None, None)
        return None

    def finish(self, index: int, result: CompareRecord, node: str | None) -> None:
        """Record a point whose comparison ended."""
        self._append(index, list(result.results), node, result.environment, result.ceilings)

    def _append(self, index: int, rows: list[VariantResult], node: str | None,
                environment: Environment | None, ceilings: Ceilings | None) -> None:
        run = self.running.pop(index)
        by_name = {r.variant: r for r in [*run.rows, *rows]}
        for name, at in run.inferred.items():
            by_name[name] = status_row(
                self.variants[name], "skipped",
                f"inferred out of memory: {name} ran out of memory at point #{at} "
                f"({describe_coords(self._coords_of(at))}), which this point covers")
        kv = costs.tensor_bytes(run.workload)
        elapsed = time.monotonic() - run.started + (run.kept.elapsed_s if run.kept else 0.0)
        if run.kept is not None:  # where and with which ceilings its kept rows were measured
            node, environment = run.kept.node, run.kept.environment or environment
            ceilings = run.kept.ceilings or ceilings
        point = SweepPoint(
            index=index, coords=run.coords, workload=run.workload.resolved(),
            results=[by_name[v] for v in self.plan.variants if v in by_name],
            inferred={**(run.kept.inferred if run.kept else {}), **run.inferred},
            elapsed_s=round(elapsed, 3),
            node=node or (environment.host if environment else None),
            environment=environment, ceilings=ceilings,
            kv_cache_bytes=kv["k"] + kv["v"] if run.workload.mode == "decode" else None)
        self.record.points = [p for p in self.record.points if p.index != index]
        self.record.points.append(point)
        self.learn(point)
        if self.progress is not None:
            self.progress.point_done(point)

    def _implied_oom(self, variant: str, coords: Coords) -> int | None:
        for at, smaller in self.oom_at.get(variant, ()):
            if covers(coords, smaller):
                return at
        return None

    def _coords_of(self, index: int) -> Coords:
        return next(p.coords for p in self.record.points if p.index == index)


@dataclass
class _Running:
    """A point being run: where it is, what was inferred, when it started, and — resumed —
    the point as the record had it and the rows of it that are kept."""

    coords: Coords
    workload: Workload
    inferred: dict[str, int]
    started: float
    kept: SweepPoint | None
    rows: list[VariantResult]
