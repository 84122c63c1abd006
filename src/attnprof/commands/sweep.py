"""``sweep``: compare variants at every point of a grid of workloads, each point in a
worker (or a Ray task), so an OOM, a crash or a hang is that point's status and the sweep
goes on; latency and memory exponents fitted over the sizes. The record is saved after
every point; a sweep resumed from its record runs only what is missing."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnprof.commands.pricing import PriceRequest
    from attnprof.outputs import Output
    from attnprof.record.sweep import SweepRecord, WorkerLimits
    from attnprof.run.executors import Executor
    from attnprof.run.sweep import SweepPlan
    from attnprof.run.sweep import SweepProgress as PointProgress

__all__ = ["SweepProgress", "SweepRequest", "executor_for", "run"]

#: Opens a display over ``(total, already done)`` points for the block (the CLI:
#: :class:`attnprof.render.progress.SweepProgress`).
SweepProgress = Callable[[int, int], AbstractContextManager["PointProgress"]]


@dataclass(frozen=True, slots=True)
class SweepRequest:
    """What ``attnprof sweep`` is asked: the planned sweep, the record it continues, where
    the record goes and what to judge it by."""

    #: The grid, the variants, the settings, the executor and its limits, every point's
    #: workload checked (:func:`~attnprof.run.sweep.plan_sweep`).
    plan: SweepPlan
    #: The record of an interrupted sweep to continue (only its missing points run, and
    #: those stopped by a timeout or a signal).
    resume: SweepRecord | None = None
    #: The record file, saved after every point and at the end; ``None``: no file.
    json: str | None = None
    #: A budgets file (TOML) every point is judged by (the verdict joins the record).
    budgets: str | None = None
    #: The Ray cluster for ``plan.executor == "ray"``; ``None``: RAY_ADDRESS, else local.
    ray_address: str | None = None
    #: Every output of the command line, checked together beforehand; their folders are
    #: made once the request is found sound.
    outputs: tuple[Output, ...] = ()
    #: The machine's price (``--price``, ``--prices``): each point's cost in the record.
    price: PriceRequest | None = None


def run(request: SweepRequest, progress: SweepProgress | None = None) -> SweepRecord:
    """Run every point of ``request.plan`` not already final in ``request.resume``; the
    sweep record, with the budgets' verdict when asked for. A stop keeps every finished
    point in ``request.json`` and says how to resume."""
    from attnprof.commands.saving import RecordFile
    from attnprof.measure.environment import collect_environment
    from attnprof.outputs import Output, create_folders
    from attnprof.record.sweep import needs_rerun
    from attnprof.run.sweep import check_resumable, run_sweep

    budgets = None
    if request.budgets:  # a malformed file fails before anything runs
        from attnprof.workload.budgets import load_budgets

        budgets = load_budgets(request.budgets)
    plan, resume = request.plan, request.resume
    if resume is not None:
        check_resumable(resume, plan, collect_environment(plan.base.device))
    executor = executor_for(plan.executor, plan.limits, request.ray_address)
    create_folders(request.outputs or ([Output("--json", request.json)] if request.json
                                       else []))
    record_file: RecordFile[SweepRecord] = RecordFile(request.json)
    kept = sum(not any(map(needs_rerun, p.results)) for p in resume.points) if resume else 0
    bar: AbstractContextManager[PointProgress | None] = (
        progress(plan.grid.size(), kept) if progress is not None else nullcontext())
    with bar as shown, record_file.kept_on_stop(
            lambda last, path: f"interrupted; {len(last.points)} finished point(s) are in "
                               f"{path}; continue with --resume {path}",
            "interrupted before any point finished; {path} not written"):
        record = run_sweep(plan, executor, record=resume, on_point=record_file.save,
                           progress=shown)
    if budgets is not None:
        from attnprof.analysis.budgets import check_budgets, measured_rows

        record.budgets = check_budgets(budgets, measured_rows(record),
                                       source=request.budgets or "")
        record_file.save(record)  # the verdict joins the saved record
    if request.price is not None:
        from attnprof.commands.pricing import attach_price

        attach_price(request.price, record, record.environment.device_name,
                     record.base.device_type)  # a machine without a price: the CLI says
        if record.price is not None:
            record_file.save(record)  # the price joins the saved record
    return record


def executor_for(name: str, limits: WorkerLimits | None, ray_address: str | None = None
                 ) -> Executor:
    """The executor called ``name`` with the points' ``limits`` (time, memory)."""
    from attnprof.errors import UsageError
    from attnprof.run.executors import get_executor

    if name == "inline":
        return get_executor("inline")
    options: dict[str, Any] = {
        "timeout_s": limits.point_timeout_s if limits else None, "idle_timeout_s": None,
        "memory_limit_bytes": limits.worker_memory_bytes if limits else None}
    if name == "ray":
        options["address"] = ray_address
    elif ray_address:
        raise UsageError("--ray-address is for --executor ray; add it or drop the address")
    return get_executor(name, **options)
