"""Sweep records built by hand, for the passes and renderers that only read records:
the numbers are chosen, so what a fit, a crossover or a plot must say is known."""

from __future__ import annotations

from collections.abc import Callable

from attnprof.record.compare import Latency, VariantResult
from attnprof.record.environment import Environment
from attnprof.record.sweep import SweepPoint, SweepRecord
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

ENV = Environment(attnprof="0", python="3", platform="p", torch="t", cuda=None, cudnn=None,
                  device="cpu", device_name="cpu", device_info={}, cpu_model="c", threads=1)


def row(variant: str, median: float | None, memory: int | None = 1 << 20, *,
        spread: float = 0.01, status: str = "ok") -> VariantResult:
    """A row: ``ok`` with this latency median (ms) and IQR/median ``spread``, within
    tolerance, or another status with nothing measured."""
    if status != "ok" or median is None:
        return VariantResult(variant=variant, family="test", status=status,  # type: ignore[arg-type]
                             reason=f"{status} here")
    iqr = spread * median
    latency = Latency(median=median, iqr=iqr, q1=median - iqr / 2, q3=median + iqr / 2,
                      min=median - iqr, max=median + iqr, count=20, noisy=spread > 0.1,
                      samples=[median])
    return VariantResult(variant=variant, family="test", status="ok", latency_ms=latency,
                         peak_memory_bytes=memory, max_abs_error=1e-6, tolerance=1e-4,
                         within_tolerance=True)


def sweep_of(values: list[int], rows: Callable[[int], list[VariantResult]],
             field: str = "seq") -> SweepRecord:
    """A complete sweep record over ``field`` = ``values`` whose points hold ``rows(x)``."""
    points = [SweepPoint(index=i, coords={field: x}, workload=Workload(**{field: x}),
                         results=rows(x), environment=ENV) for i, x in enumerate(values)]
    variants = [r.variant for r in points[0].results]
    return SweepRecord(environment=ENV, base=Workload(), grid=Grid(axes=[
        Axis(field=field, values=list(values))]), variants=variants, settings=Settings(),
        flops_convention="x", points=points, status="complete")
