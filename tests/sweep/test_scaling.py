"""The scaling pass: power-law fits with honest intervals, and crossovers, from points."""

from __future__ import annotations

import math

import pytest
from synthetic_sweeps import row, sweep_of

from attnprof.analysis.scaling import analyse_sweep, fit_power_law
from attnprof.record.compare import Latency, VariantResult
from attnprof.record.environment import Environment
from attnprof.record.sweep import SweepPoint, SweepRecord
from attnprof.workload.grid import Axis, Grid
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings


def test_an_exact_power_law_has_its_exponent_and_r2_of_one() -> None:
    xs = [256, 512, 1024, 2048]
    exponent, prefactor, ci, r2 = fit_power_law(xs, [3.0 * x**2 for x in xs])
    assert exponent == pytest.approx(2.0) and prefactor == pytest.approx(3.0)
    assert ci is not None and ci[0] == pytest.approx(2.0) and ci[1] == pytest.approx(2.0)
    assert r2 == pytest.approx(1.0)


def test_the_interval_widens_with_few_noisy_points() -> None:
    xs = [1, 2, 4, 8]
    ys = [1.0, 4.4, 15.0, 70.0]
    exponent, _, ci, r2 = fit_power_law(xs, ys)
    assert ci is not None and ci[0] < exponent < ci[1]
    # Student's t with 2 degrees of freedom: 4.30 standard errors, not 1.96.
    wide = ci[1] - ci[0]
    _, _, ci_many, _ = fit_power_law(xs * 4, ys * 4)
    assert ci_many is not None and ci_many[1] - ci_many[0] < wide / 2
    assert r2 is not None and 0.9 < r2 < 1.0


def test_two_points_give_an_exponent_without_an_interval() -> None:
    exponent, _, ci, r2 = fit_power_law([10, 100], [1.0, 10.0])
    assert exponent == pytest.approx(1.0) and ci is None and r2 is None


def _row(variant: str, latency: float | None, memory: int | None,
         status: str = "ok") -> VariantResult:
    lat = None if latency is None else Latency(median=latency, iqr=0, q1=latency, q3=latency,
                                               min=latency, max=latency, count=1, noisy=False,
                                               samples=[latency])
    return VariantResult(variant=variant, family="test", status=status,  # type: ignore[arg-type]
                         latency_ms=lat, peak_memory_bytes=memory)


def test_fits_per_variant_and_group_and_crossovers() -> None:
    env = Environment(attnprof="0", python="3", platform="p", torch="t", cuda=None, cudnn=None,
                      device="cpu", device_name="cpu", device_info={}, cpu_model="c", threads=1)
    grid = Grid(axes=[Axis(field="mode", values=["forward"]),
                      Axis(field="seq", values=[100, 200, 400, 800])])
    points = []
    for i, s in enumerate([100, 200, 400, 800]):
        rows = [_row("quadratic", 1.2e-4 * s**2, 8 * s * s),
                _row("linear", 0.02 * s, 64 * s),
                # fails at the largest size: fitted over the three that ran
                _row("fails", 1e-3 * s, 16 * s) if s < 800 else _row("fails", None, None, "oom")]
        points.append(SweepPoint(index=i, coords={"mode": "forward", "seq": s},
                                 workload=Workload(seq=s), results=rows))
    record = SweepRecord(environment=env, base=Workload(), grid=grid,
                         variants=["quadratic", "linear", "fails"], settings=Settings(),
                         flops_convention="x", points=points[::-1])  # out of order on purpose
    done = analyse_sweep(record)
    quad = done.fit("quadratic", "peak_memory_bytes", "seq")
    assert quad is not None and quad.exponent == pytest.approx(2.0)
    assert quad.group == {"mode": "forward"} and quad.fitted_range == (100, 800)
    lin = done.fit("linear", "latency_ms", "seq")
    assert lin is not None and lin.exponent == pytest.approx(1.0) and lin.points == 4
    fails = done.fit("fails", "latency_ms", "seq")
    assert fails is not None and fails.points == 3 and fails.fitted_range == (100, 400)
    # Latency: 0.02·s overtakes 1.2e-4·s² where they meet, s = 166.7, between the measured
    # 100 and 200. Memory: 64·s and 8·s² meet at s = 8, below the range: no crossing.
    crossings = {(c.quantity, c.overtaker, c.overtaken): c for c in done.crossovers}
    assert ("peak_memory_bytes", "linear", "quadratic") not in crossings
    lat = crossings[("latency_ms", "linear", "quadratic")]
    assert lat.between == (100, 200) and math.isclose(lat.at, 0.02 / 1.2e-4, rel_tol=1e-9)


SIZES = [128, 256, 512, 1024, 2048]


def _jumpy(x: int) -> list[VariantResult]:
    """``jumpy`` 10% faster than ``steady`` (∝ seq), but measured 15% slower and noisy
    (30% spread) at 512: one noisy jump."""
    jump = x == 512
    return [row("steady", x / 100), row("jumpy", (1.15 if jump else 0.9) * x / 100,
                                        spread=0.3 if jump else 0.01)]


def test_a_noisy_jump_is_marked_and_makes_no_crossover() -> None:
    done = analyse_sweep(sweep_of(SIZES, _jumpy))
    # At 512 the two differ by 15%, within jumpy's 30% spread there: a tie, not an order.
    # So jumpy does not "overtake" steady between 256 and 512 and back between 512 and 1024.
    assert done.crossovers == []
    jumpy = done.fit("jumpy", "latency_ms", "seq")
    assert jumpy is not None and jumpy.noisy == [512] and jumpy.outliers == [512]
    assert jumpy.caveats[:2] == ["noisy at seq=512",
                                 "seq=512 off the power law through the other points"]
    steady = done.fit("steady", "latency_ms", "seq")
    assert steady is not None and steady.caveats == [] and steady.outliers == []


def test_a_short_fit_says_its_interval_is_wide_and_a_falling_one_says_so() -> None:
    done = analyse_sweep(sweep_of([256, 512, 1024], lambda x: [
        row("wobbly", {256: 1.0, 512: 3.0, 1024: 2.5}[x])]))
    fit = done.fit("wobbly", "latency_ms", "seq")
    assert fit is not None and fit.ci95 is not None
    assert any(c.startswith("wide interval (±") for c in fit.caveats)
    two = analyse_sweep(sweep_of([256, 512], lambda x: [row("falling", 1024 / x)]))
    falling = two.fit("falling", "latency_ms", "seq")
    assert falling is not None
    assert falling.caveats == ["falls as seq grows: noise or caches, not scaling"]


def test_a_crossover_resting_on_a_noisy_point_says_so() -> None:
    # 0.02·s overtakes 1.2e-4·s² at s ≈ 167, between 100 and 200; linear is noisy at 100
    # (15%), though 67% apart there: a real order, with a caveat.
    done = analyse_sweep(sweep_of([100, 200, 400], lambda s: [
        row("quadratic", 1.2e-4 * s * s), row("linear", 0.02 * s,
                                                spread=0.15 if s == 100 else 0.01)]))
    (crossing,) = [c for c in done.crossovers if c.quantity == "latency_ms"]
    assert (crossing.overtaker, crossing.between) == ("linear", (100, 200))
    assert crossing.caveat == "linear at seq=100 is noisy"
