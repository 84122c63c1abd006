"""``recommend``: the best variant per shape under latency and memory limits — the fastest
that ran, is within tolerance and meets the limits, the runner-up and what decided it —
from a sweep run now or a sweep record; under a memory limit, each candidate is measured
again at the largest batch its peak suggests fits."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from attnprof.analysis.recommend import Constraints
    from attnprof.commands.pricing import PriceRequest
    from attnprof.commands.sweep import SweepRequest
    from attnprof.outputs import Output
    from attnprof.record.sweep import RecommendRecord, SweepPoint, SweepRecord
    from attnprof.run.sweep import SweepProgress as PointProgress

__all__ = ["RecommendProgress", "RecommendRequest", "run"]


class RecommendProgress(Protocol):
    """What ``recommend`` shows as it goes (the CLI: the sweep's bar, notes dimmed)."""

    def points(self, total: int, done: int) -> AbstractContextManager[PointProgress]:
        """A bar over the sweep's ``total`` points, ``done`` of them already."""

    def note(self, text: str) -> None:
        """A line on what runs next."""


@dataclass(frozen=True, slots=True)
class RecommendRequest:
    """What ``attnprof recommend`` is asked: the limits, and the sweep to run
    (``sweep``) or the sweep record to read (``from_record``): exactly one of them."""

    #: The sweep to run now.
    sweep: SweepRequest | None = None
    #: A finished sweep's record to recommend from instead.
    from_record: str | None = None
    #: The latency limit per step, e.g. ``"5ms"``.
    max_latency: str | None = None
    #: The peak memory limit, e.g. ``"2GiB"``.
    max_memory: str | None = None
    #: The cap of the workers measuring larger batches, e.g. ``"8GiB"``; ``None``: a
    #: margin over ``max_memory``.
    worker_memory: str | None = None
    #: The record file (the sweep record, the recommendation added); ``None``: no file.
    json: str | None = None
    #: With ``from_record``: the command line's outputs, checked beforehand; their
    #: folders are made here. (A sweep run now makes its own.)
    outputs: tuple[Output, ...] = ()
    #: What ranks the candidates: ``"latency"`` per call, or ``"cost"`` per million
    #: tokens at ``price`` (which it needs).
    objective: Literal["latency", "cost"] = "latency"
    #: The machine's price (``--price``, ``--prices``); each pick costed when given.
    price: PriceRequest | None = None


def run(request: RecommendRequest, progress: RecommendProgress | None = None
        ) -> RecommendRecord:
    """Name the best variant per shape; the recommend record (the sweep's, with the
    recommendation). :class:`~attnprof.errors.UsageError` before anything runs for a
    mistake in the request."""
    from attnprof.analysis.recommend import Constraints, recommend
    from attnprof.analysis.structure_choice import structure_choices
    from attnprof.commands.saving import RecordFile
    from attnprof.errors import UsageError
    from attnprof.record.recommendation import Recommended
    from attnprof.record.sweep import RecommendRecord, SweepRecord
    from attnprof.workload.quantities import parse_bytes, parse_ms

    constraints = Constraints(
        max_latency_ms=(parse_ms("--max-latency", request.max_latency)
                        if request.max_latency else None),
        max_memory_bytes=(parse_bytes("--max-memory", request.max_memory)
                          if request.max_memory else None))
    if (request.sweep is None) == (request.from_record is None):
        raise UsageError("recommend needs a sweep to run or a sweep record (--from), not "
                         "both nor neither")
    if request.from_record is not None:
        from attnprof.outputs import create_folders

        create_folders(request.outputs)
        sweep = SweepRecord.load(request.from_record)
        source = f"from {request.from_record}"
    else:
        from attnprof.commands import sweep as sweep_command

        assert request.sweep is not None
        sweep = sweep_command.run(request.sweep,
                                  progress.points if progress is not None else None)
        source = "measured now"
        sweep.batch_points = _larger_batches(request, sweep, constraints, progress)
    recs = recommend(sweep.points, sweep.variants, constraints, sweep.batch_points)
    record = RecommendRecord.of_sweep(sweep)
    record.recommendation = Recommended(constraints=constraints, source=source,
                                        recommendations=recs,
                                        structures=structure_choices(record.points, recs))
    if request.price is not None:
        from attnprof.commands.pricing import rank_by_objective

        note = rank_by_objective(record, request.price, request.objective)
        if note and progress is not None:
            progress.note(note)
    RecordFile[RecommendRecord](request.json).save(record)
    return record


def _larger_batches(request: RecommendRequest, record: SweepRecord, constraints: Constraints,
                    progress: RecommendProgress | None) -> list[SweepPoint]:
    """Under ``max_memory``, each candidate measured at the largest batch its peak memory
    suggests (see :func:`~attnprof.analysis.recommend.batch_estimates`)."""
    from attnprof.analysis.recommend import batch_estimates
    from attnprof.commands.sweep import executor_for
    from attnprof.record.sweep import WorkerLimits
    from attnprof.run.limits import probe_cap
    from attnprof.run.recommend import measure_batches
    from attnprof.workload.quantities import parse_bytes

    estimates = batch_estimates(record.points, record.variants, constraints)
    limit = constraints.max_memory_bytes
    if not estimates or limit is None:
        return []
    if progress is not None:
        progress.note(f"measuring {len(estimates)} larger batch(es) within --max-memory …")
    # A larger batch that does not fit is judged by its measured peak; its worker's cap is
    # only there to stop one far beyond the limit before the kernel's OOM killer does.
    cap = (parse_bytes("--worker-memory", request.worker_memory) if request.worker_memory
           else probe_cap(limit, record.base.device))
    timeout = record.limits.point_timeout_s if record.limits else None
    assert request.sweep is not None
    executor = executor_for(record.executor,
                            WorkerLimits(point_timeout_s=timeout, worker_memory_bytes=cap),
                            request.sweep.ray_address)
    return measure_batches(record, estimates, executor, limit)
