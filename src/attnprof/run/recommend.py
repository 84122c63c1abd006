"""The runs a recommendation asks for beyond its sweep: each candidate at the largest
batch its memory should allow within the limit, so the throughput there is measured,
not extrapolated (:func:`attnprof.analysis.recommend.batch_estimates` says which)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from attnprof.analysis import memory_fit
from attnprof.record.sweep import SweepPoint, SweepRecord
from attnprof.run.point import Point

if TYPE_CHECKING:
    from attnprof.run.executors import Executor

__all__ = ["measure_batches"]


def measure_batches(record: SweepRecord, estimates: dict[tuple[int, str], int],
                    executor: Executor, limit_bytes: int,
                    on_point: Callable[[SweepPoint], None] | None = None) -> list[SweepPoint]:
    """Run each (point, variant) of ``estimates`` at its batch (and at half of it when that
    does not fit ``limit_bytes``, by :func:`~attnprof.analysis.memory_fit.fits`); one new
    point per run, its coordinates the point's with ``batch`` added, indexed after the
    sweep's own points.

    The float64 accuracy reference is not run again (the variant was checked at this
    shape).
    """
    by_index = {p.index: p for p in record.points}
    settings = record.settings.replace(check_accuracy=False)
    extra: list[SweepPoint] = []
    for (index, variant), estimate in sorted(estimates.items()):
        base = by_index[index]
        # The estimate is a proportion; when it does not fit, half of it usually does.
        for batch in (estimate, estimate // 2):
            if batch <= base.workload.batch:
                break
            workload = base.workload.replace(batch=batch)
            result = executor.run(Point(workload=workload, variants=(variant,),
                                        settings=settings, ceilings=base.ceilings))
            point = SweepPoint(index=record.grid.size() + len(extra),
                               coords={**base.coords, "batch": batch}, workload=workload,
                               results=list(result.results), environment=result.environment,
                               node=result.environment.host, ceilings=result.ceilings)
            extra.append(point)
            if on_point is not None:
                on_point(point)
            if all(memory_fit.fits(r, limit_bytes) for r in point.results):
                break
    return extra
