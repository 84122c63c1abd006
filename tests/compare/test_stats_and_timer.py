"""Statistics and the timing loop, driven by an injected clock (no wall-clock asserts)."""

from __future__ import annotations

import pytest

from attnprof.measure.stats import summarize
from attnprof.measure.timer import time_step
from attnprof.workload.settings import TimingPlan


def test_summary_of_known_samples() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (s.median, s.q1, s.q3, s.minimum, s.maximum, s.count) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert s.iqr == 2.0
    assert s.noisy  # IQR/median = 0.67


def test_tight_samples_are_not_noisy() -> None:
    s = summarize([10.0, 10.1, 10.0, 9.9, 10.05, 10.0])
    assert not s.noisy
    assert s.relative_iqr < 0.1


def test_single_sample() -> None:
    s = summarize([2.5])
    assert s.median == 2.5 and s.iqr == 0 and not s.noisy


def test_no_samples_is_an_error() -> None:
    with pytest.raises(ValueError):
        summarize([])


class FakeClock:
    """Time advances only when the measured step runs."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _step(clock: FakeClock, durations: list[float]):
    calls = iter(durations)

    def step() -> None:
        clock.now += next(calls, durations[-1])

    return step


def test_sample_count_follows_the_warmup_estimate() -> None:
    clock = FakeClock()
    plan = TimingPlan(warmup_s=0.05, min_time_s=0.4, min_samples=10, max_samples=1000)
    timing = time_step(_step(clock, [0.010]), plan=plan, clock=clock, sync=lambda: None)
    # 0.4 s of sampling at 10 ms per call
    assert len(timing.samples_ms) == 41
    assert timing.samples_ms == pytest.approx([10.0] * 41)
    assert timing.warmup_calls == 5


def test_first_call_is_kept_apart_from_the_samples() -> None:
    clock = FakeClock()
    plan = TimingPlan(warmup_s=0.0, min_time_s=0.1, min_samples=3)
    timing = time_step(_step(clock, [30.0, 0.01]), plan=plan, clock=clock,
                       sync=lambda: None)
    assert timing.first_call_s == pytest.approx(30.0)  # e.g. torch.compile
    assert max(timing.samples_ms) == pytest.approx(10.0)


@pytest.mark.parametrize(("per_call", "expected"), [(1e-6, 2000), (10.0, 10), (0.0, 2000)])
def test_sample_count_bounds(per_call: float, expected: int) -> None:
    assert TimingPlan(min_samples=10, max_samples=2000).sample_count(per_call) == expected
