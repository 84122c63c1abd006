"""Scaling fits over a sweep record: a pure pass from points to exponents and crossovers.

For every swept size field (``seq``, ``batch``, ...), every variant and each of latency and
peak memory, the points that differ only in that field (every other coordinate — mode,
dtype, the other sizes — held equal: a *group*) are fitted with ``y = c · x^a`` by ordinary
least squares on log-log axes. The exponent comes with its 95% confidence interval from
Student's t with n − 2 degrees of freedom (with four points that is ±4.30 standard errors,
not ±1.96: a short sweep is honestly uncertain), and R² in log-log space. Only ``ok`` rows
with a positive value enter a fit; a fit needs two distinct field values.

A fit says when it should not be read as a scaling law (``caveats``): a latency measured
noisy at some of its points (IQR/median > 10%), a point far off the power law through the
others (a *residual outlier*: more than 25% off, and more than four times the others'
scatter about their own line; with four points or more), an interval wider than ±0.5 (the
exponent is not known to within one power of the field), or a quantity that falls as the
field grows.

A crossover is where, in one group, one variant's measured values go from above another's
to below it between two neighbouring field values, each order told apart beyond the noise
(:mod:`attnprof.analysis.noise`: more than 5% and more than either point's spread; closer
than that is a tie, not an order); the crossing is interpolated on log-log axes between
those two points. One whose ends are noisy or off their variant's fit says so
(``caveat``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from itertools import combinations, pairwise

import msgspec
import numpy as np

from attnprof.analysis import noise
from attnprof.record.compare import VariantResult
from attnprof.record.sweep import (
    QUANTITIES,
    Crossover,
    Quantity,
    ScalingFit,
    SweepPoint,
    SweepRecord,
)
from attnprof.workload.grid import INTEGER_FIELDS

__all__ = ["analyse_sweep", "find_crossovers", "fit_power_law", "scaling_fits", "value_of"]

Series = dict[int, float]  # field value -> measured value
#: A point more than this far off the line through the others (log ratio: 25%) ...
_OUTLIER_OFF = math.log(1.25)
#: ... and more than this many times the others' residual scatter is a residual outlier.
_OUTLIER_SCATTER = 4.0
#: An exponent whose 95% interval is wider than ± this is not a scaling law yet.
_WIDE = 0.5
#: A fitted exponent below this says the quantity falls as the field grows.
_FALLING = -0.1


def analyse_sweep(record: SweepRecord) -> SweepRecord:
    """``record`` with its ``fits`` and ``crossovers`` computed from its points."""
    fits = scaling_fits(record)
    return msgspec.structs.replace(record, fits=fits,
                                   crossovers=find_crossovers(record, fits))


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
    for series in _series(record):
        if len(series.values) < 2:
            continue
        xs = sorted(series.values)
        ys = [series.values[x] for x in xs]
        exponent, prefactor, ci, r2 = fit_power_law(xs, ys)
        noisy = [x for x in xs if x in series.noisy]
        outliers = [xs[i] for i in _outliers(xs, ys)]
        fits.append(ScalingFit(variant=series.variant, quantity=series.quantity,
                               field=series.field, group=series.group, exponent=exponent,
                               prefactor=prefactor, ci95=ci, r_squared=r2, points=len(xs),
                               fitted_range=(xs[0], xs[-1]), noisy=noisy, outliers=outliers,
                               caveats=_caveats(series.field, exponent, ci, noisy, outliers)))
    return fits


def _caveats(field: str, exponent: float, ci: tuple[float, float] | None, noisy: list[int],
             outliers: list[int]) -> list[str]:
    """Why a fit should not be read as a scaling law (see the module doc)."""
    said = []
    if noisy:
        said.append(f"noisy at {field}={','.join(map(str, noisy))}")
    if outliers:
        said.append(f"{field}={','.join(map(str, outliers))} off the power law through the "
                    "other points")
    if ci is not None and (ci[1] - ci[0]) / 2 > _WIDE:
        said.append(f"wide interval (±{(ci[1] - ci[0]) / 2:.2f})")
    if exponent < _FALLING:
        said.append(f"falls as {field} grows: noise or caches, not scaling")
    return said


def _outliers(xs: list[int], ys: list[float]) -> list[int]:
    """Indices of the residual outliers among at least four points (see the module doc):
    each point against the line fitted through the others."""
    n = len(xs)
    if n < 4:
        return []
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    found = []
    for i in range(n):
        keep = np.arange(n) != i
        slope, intercept = np.polyfit(lx[keep], ly[keep], 1)
        rest = ly[keep] - (slope * lx[keep] + intercept)
        scatter = math.sqrt(float(rest @ rest) / (n - 3))
        off = abs(float(ly[i] - (slope * lx[i] + intercept)))
        if off > _OUTLIER_OFF and off > _OUTLIER_SCATTER * scatter:
            found.append(i)
    return found


def find_crossovers(record: SweepRecord, fits: list[ScalingFit] | None = None
                    ) -> list[Crossover]:
    """Where one variant overtakes another along a swept field (see the module doc);
    ``fits`` (the record's, by default) name the points off their variant's fit."""
    fits = record.fits if fits is None else fits
    off = {(f.variant, f.quantity, f.field, _key(f.group)): set(f.outliers) for f in fits}
    by_key: dict[tuple[str, str, Quantity], dict[str, _Series]] = {}
    for series in _series(record):
        key = (series.field, _key(series.group), series.quantity)
        by_key.setdefault(key, {})[series.variant] = series
    found = []
    for (field, group, quantity), per_variant in by_key.items():
        for a, b in combinations(per_variant, 2):
            sa, sb = per_variant[a], per_variant[b]
            for lower_after, (x0, x1, at) in _crossings(sa, sb):
                overtaker, overtaken = (a, b) if lower_after == "a" else (b, a)
                doubtful = [f"{s.variant} at {field}={x} is {why}"
                            for s in (sa, sb) for x in (x0, x1)
                            for why in (("noisy",) if x in s.noisy else ())
                            + (("off its fit",) if x in off.get(
                                (s.variant, quantity, field, group), ()) else ())]
                found.append(Crossover(quantity=quantity, field=field, group=sa.group,
                                       overtaker=overtaker, overtaken=overtaken, at=at,
                                       between=(x0, x1),
                                       caveat="; ".join(doubtful) or None))
    return found


def _crossings(a: _Series, b: _Series) -> list[tuple[str, tuple[int, int, float]]]:
    """Sign changes of log(a) − log(b) between neighbouring common x values whose order
    is told apart beyond the noise."""
    common = sorted(set(a.values) & set(b.values))
    gap = {x: math.log(a.values[x]) - math.log(b.values[x]) for x in common}
    # Within the noise is a tie, not an order: two variants that run the same kernels would
    # otherwise "overtake" each other at every wobble of the clock. A tie is crossed
    # between its neighbours.
    xs = [x for x in common if noise.differ(a.values[x], b.values[x],
                                            a.spreads.get(x, 0.0), b.spreads.get(x, 0.0))]
    out = []
    for x0, x1 in pairwise(xs):
        d0, d1 = gap[x0], gap[x1]
        if d0 * d1 > 0:
            continue
        t = d0 / (d0 - d1)
        at = math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))
        out.append(("a" if d1 < 0 else "b", (x0, x1, at)))
    return out


@dataclass
class _Series:
    """One variant's measured ``quantity`` along ``field`` in one group: value and
    relative spread (latency's IQR/median; none for memory) per field value, and the
    values whose latency the record marks noisy."""

    field: str
    group: dict[str, int | str]
    variant: str
    quantity: Quantity
    values: Series = dc_field(default_factory=dict)
    spreads: dict[int, float] = dc_field(default_factory=dict)
    noisy: set[int] = dc_field(default_factory=set)


def _key(group: dict[str, int | str]) -> str:
    return repr(sorted(group.items()))


def _series(record: SweepRecord) -> Iterable[_Series]:
    """Every (field, group, variant, quantity) series of a swept size field."""
    points = record.ordered_points()
    swept = [f for f in record.grid.fields if f in INTEGER_FIELDS]
    for field in swept:
        grouped: dict[str, tuple[dict[str, int | str], list[SweepPoint]]] = {}
        for point in points:
            if field not in point.coords:
                continue
            group = {k: v for k, v in point.coords.items() if k != field}
            grouped.setdefault(_key(group), (group, []))[1].append(point)
        for group, members in grouped.values():
            for variant in record.variants:
                for quantity in QUANTITIES:
                    series = _Series(field, group, variant, quantity)
                    for point in members:
                        row = point.result(variant)
                        value = value_of(row, quantity) if row is not None else None
                        if row is not None and value is not None:
                            x = int(point.coords[field])
                            series.values[x] = value
                            if quantity == "latency_ms" and row.latency_ms is not None:
                                series.spreads[x] = noise.spread(row.latency_ms)
                                if row.latency_ms.noisy:
                                    series.noisy.add(x)
                    yield series
