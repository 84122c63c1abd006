"""Scaling fits over a sweep record: a pure pass from points to exponents and crossovers.

For every swept size field (``seq``, ``batch``, ...), every variant and each of latency and
peak memory, the points that differ only in that field (every other coordinate — mode,
dtype, the other sizes — held equal: a *group*) are fitted with ``y = c · x^a`` by ordinary
least squares on log-log axes. The exponent comes with its 95% confidence interval from
Student's t with n − 2 degrees of freedom (with four points that is ±4.30 standard errors,
not ±1.96: a short sweep is honestly uncertain), and R² in log-log space. Only ``ok`` rows
with a positive value enter a fit; a fit needs two distinct field values.

A crossover is where, in one group, one variant's measured values go from more than 5%
above another's to more than 5% below it between two neighbouring field values (closer
than that is a tie, not an order); the crossing is interpolated on log-log axes between
those two points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import combinations, pairwise

import msgspec
import numpy as np

from attnprof.record.compare import VariantResult
from attnprof.record.sweep import (
    QUANTITIES,
    Crossover,
    Quantity,
    ScalingFit,
    SweepPoint,
    SweepRecord,
)
from attnprof.spec.grid import INTEGER_FIELDS

__all__ = ["analyse_sweep", "find_crossovers", "fit_power_law", "scaling_fits", "value_of"]

Series = dict[int, float]  # field value -> measured value
_TIE = math.log(1.05)


def analyse_sweep(record: SweepRecord) -> SweepRecord:
    """``record`` with its ``fits`` and ``crossovers`` computed from its points."""
    fits = scaling_fits(record)
    return msgspec.structs.replace(record, fits=fits, crossovers=find_crossovers(record))


def value_of(row: VariantResult, quantity: Quantity) -> float | None:
    """The measured value a fit uses (``None`` when the row has none to offer)."""
    if row.status != "ok":
        return None
    if quantity == "latency_ms":
        value = row.latency_ms.median if row.latency_ms else None
    else:
        value = row.peak_memory_bytes
    return float(value) if value is not None and value > 0 else None


def fit_power_law(xs: Iterable[float], ys: Iterable[float]
                  ) -> tuple[float, float, tuple[float, float] | None, float | None]:
    """Least-squares fit of ``log y = a · log x + b``: ``(a, e^b, 95% CI of a, R²)``.

    The interval and R² are ``None`` with two points (a line through two points has no
    residual to estimate its uncertainty from).
    """
    from scipy.special import stdtrit  # Student t quantile; scipy.special imports fast

    lx, ly = np.log(np.asarray(list(xs), float)), np.log(np.asarray(list(ys), float))
    n = len(lx)
    design = np.column_stack([lx, np.ones(n)])
    (slope, intercept), *_ = np.linalg.lstsq(design, ly, rcond=None)
    if n < 3:
        return float(slope), math.exp(intercept), None, None
    residuals = ly - (slope * lx + intercept)
    sse, sxx = float(residuals @ residuals), float(((lx - lx.mean()) ** 2).sum())
    sst = float(((ly - ly.mean()) ** 2).sum())
    stderr = math.sqrt(sse / (n - 2) / sxx)
    half = float(stdtrit(n - 2, 0.975)) * stderr
    r_squared = 1.0 - sse / sst if sst > 0 else None
    return (float(slope), math.exp(intercept), (float(slope - half), float(slope + half)),
            r_squared)


def scaling_fits(record: SweepRecord) -> list[ScalingFit]:
    """Every fit the points allow (see the module doc), in a stable order."""
    fits = []
    for field, group, variant, quantity, series in _series(record):
        if len(series) < 2:
            continue
        xs = sorted(series)
        exponent, prefactor, ci, r2 = fit_power_law(xs, [series[x] for x in xs])
        fits.append(ScalingFit(variant=variant, quantity=quantity, field=field, group=group,
                               exponent=exponent, prefactor=prefactor, ci95=ci, r_squared=r2,
                               points=len(xs), fitted_range=(xs[0], xs[-1])))
    return fits


def find_crossovers(record: SweepRecord) -> list[Crossover]:
    """Where one variant overtakes another along a swept field (see the module doc)."""
    by_key: dict[tuple[str, str, Quantity], dict[str, Series]] = {}
    groups: dict[str, dict[str, int | str]] = {}
    for field, group, variant, quantity, series in _series(record):
        key = repr(sorted(group.items()))
        groups[key] = group
        by_key.setdefault((field, key, quantity), {})[variant] = series
    found = []
    for (field, key, quantity), per_variant in by_key.items():
        for a, b in combinations(per_variant, 2):
            for crossing in _crossings(per_variant[a], per_variant[b]):
                lower_after, (x0, x1, at) = crossing
                overtaker, overtaken = (a, b) if lower_after == "a" else (b, a)
                found.append(Crossover(quantity=quantity, field=field, group=groups[key],
                                       overtaker=overtaker, overtaken=overtaken, at=at,
                                       between=(x0, x1)))
    return found


def _crossings(a: Series, b: Series) -> list[tuple[str, tuple[int, int, float]]]:
    """Sign changes of log(a) − log(b) between neighbouring common x values."""
    gap = {x: math.log(a[x]) - math.log(b[x]) for x in sorted(set(a) & set(b))}
    # Within 5% is a tie, not an order: two variants that run the same kernels would
    # otherwise "overtake" each other at every wobble of the clock. A tie is crossed
    # between its neighbours.
    xs = [x for x, d in gap.items() if abs(d) > _TIE]
    out = []
    for x0, x1 in pairwise(xs):
        d0, d1 = gap[x0], gap[x1]
        if d0 * d1 > 0:
            continue
        t = d0 / (d0 - d1)
        at = math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))
        out.append(("a" if d1 < 0 else "b", (x0, x1, at)))
    return out


def _series(record: SweepRecord
            ) -> Iterable[tuple[str, dict[str, int | str], str, Quantity, Series]]:
    """(field, group, variant, quantity, {x: y}) for every swept size field."""
    points = record.ordered_points()
    swept = [f for f in record.grid.fields if f in INTEGER_FIELDS]
    for field in swept:
        grouped: dict[str, tuple[dict[str, int | str], list[SweepPoint]]] = {}
        for point in points:
            if field not in point.coords:
                continue
            group = {k: v for k, v in point.coords.items() if k != field}
            grouped.setdefault(repr(sorted(group.items())), (group, []))[1].append(point)
        for group, members in grouped.values():
            for variant in record.variants:
                for quantity in QUANTITIES:
                    series: Series = {}
                    for point in members:
                        row = point.result(variant)
                        value = value_of(row, quantity) if row is not None else None
                        if value is not None:
                            series[int(point.coords[field])] = value
                    yield field, group, variant, quantity, series
