"""The statistics of a diff, checked against their definitions: Mann-Whitney U's p-value
(scipy's, with the degenerate cases handled), the smallest p a sample count allows, Holm's
adjustment, and the verdicts a diff gives rows."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from attnprof.analysis.diff.metrics import exact, judge, sampled
from attnprof.analysis.diff.stats import holm, mann_whitney_p, smallest_p
from attnprof.record.diff import RowDiff


def test_smallest_p_is_the_most_extreme_ordering() -> None:
    # Every arrangement of 3 + 3 ranks: the exact test's two-sided p of the most extreme.
    n = 3
    assert smallest_p(n, n) == pytest.approx(2 / math.comb(6, 3)) == pytest.approx(0.1)
    assert mann_whitney_p([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(0.1)
    assert smallest_p(4, 4) < 0.05 < smallest_p(3, 3)
    assert smallest_p(0, 5) == 1.0
    # Thousands of samples a side (a sub-millisecond variant's rounds): the count of
    # orderings is past a float's range; the answer is 0, not an OverflowError.
    assert smallest_p(3000, 3000) == 0.0


def test_mann_whitney_finds_a_shift_and_not_noise() -> None:
    rng = random.Random(0)
    base = [rng.lognormvariate(0, 0.05) for _ in range(200)]
    same = [rng.lognormvariate(0, 0.05) for _ in range(200)]
    slower = [x * 1.10 for x in (rng.lognormvariate(0, 0.05) for _ in range(200))]
    assert mann_whitney_p(base, slower) < 1e-10
    assert mann_whitney_p(base, same) > 0.01
    assert mann_whitney_p([1.0] * 5, [1.0] * 5) == 1.0  # nothing to rank
    with pytest.raises(ValueError):
        mann_whitney_p([], [1.0])


def test_holm_matches_its_definition() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> non-decreasing 0.06.
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == []
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])
    for values in itertools.permutations([0.001, 0.2, 0.03]):
        adjusted = holm(list(values))
        assert all(a >= v for a, v in zip(adjusted, values, strict=True))


def test_judge_corrects_across_rows_and_says_what_is_detectable() -> None:
    rng = random.Random(1)
    base = [rng.gauss(10, 0.2) for _ in range(50)]
    rows = [RowDiff(key={"variant": "slow"}, state="compared",
                    metrics=[sampled("latency_ms", "ms", base, [x * 1.1 for x in base], 0.05)]),
            RowDiff(key={"variant": "same"}, state="compared",
                    metrics=[sampled("latency_ms", "ms", base, list(reversed(base)), 0.05)]),
            RowDiff(key={"variant": "few"}, state="compared",
                    metrics=[sampled("latency_ms", "ms", [1.0, 1.1, 1.2], [2.0, 2.1, 2.2],
                                     0.05)])]
    judge(rows, 0.05)
    slow, same, few = (r.metrics[0] for r in rows)
    assert slow.significant and slow.worse and slow.change == pytest.approx(0.1, abs=0.01)
    assert same.significant is False and not same.worse
    assert few.detectable is False and few.significant is False  # 3 vs 3 can never reach 0.05
    assert slow.p_adjusted == pytest.approx(min(1.0, 3 * slow.p_value))  # the smallest of 3


def test_exact_metrics_differ_or_do_not() -> None:
    assert exact("peak_memory_bytes", "B", 100.0, 150.0).significant
    grown = exact("peak_memory_bytes", "B", 100.0, 150.0)
    assert grown.worse and grown.change == pytest.approx(0.5)
    assert exact("peak_memory_bytes", "B", 100.0, 100.0).significant is False
    assert exact("peak_memory_bytes", "B", None, 100.0).significant is None


def test_detectable_change_and_samples_needed_agree_with_simulation() -> None:
    from attnprof.analysis.diff.stats import detectable_change, samples_for

    spread, alpha = 0.15, 0.05  # ~40 samples: where the normal approximation holds
    n = samples_for(0.10, spread, alpha)
    assert detectable_change(n, n, spread, alpha) <= 0.10 < detectable_change(
        n - 1, n - 1, spread, alpha)
    # What it promises: a 10% shift found at least 4 times in 5 with that many samples.
    rng = random.Random(7)
    found = sum(
        mann_whitney_p([rng.gauss(1.0, spread) for _ in range(n)],
                       [rng.gauss(1.1, spread) for _ in range(n)]) < alpha
        for _ in range(300))
    assert found / 300 >= 0.75


def test_noisy_rows_get_a_warning_with_the_samples_that_would_do() -> None:
    from attnprof.analysis.diff import _sample_warnings

    rng = random.Random(3)
    noisy = [rng.lognormvariate(0, 0.4) for _ in range(12)]
    row = RowDiff(key={"variant": "x"}, state="compared",
                  metrics=[sampled("latency_ms", "ms", noisy, list(reversed(noisy)), 0.05)])
    judge([row], 0.05)
    m = row.metrics[0]
    assert m.detectable_change is not None and m.detectable_change > 0.10
    assert m.samples_needed is not None and m.samples_needed > 12
    (warning,) = _sample_warnings([row], 0.05)
    assert "cannot reliably show a 10% change" in warning
    assert f"about {m.samples_needed} samples per side" in warning


def test_the_gate_names_rows_it_could_not_judge() -> None:
    from attnprof.analysis.diff.gate import blind_rows, regressions
    from attnprof.record.diff import DiffRecord, DiffSide

    rng = random.Random(5)
    noisy = [rng.lognormvariate(0, 0.4) for _ in range(12)]
    steady = [rng.gauss(1.0, 0.005) for _ in range(200)]
    rows = [RowDiff(key={"variant": name}, state="compared",
                    metrics=[sampled("latency_ms", "ms", s, list(reversed(s)), 0.05)])
            for name, s in (("noisy", noisy), ("steady", steady))]
    judge(rows, 0.05)
    diff = DiffRecord(old=DiffSide(ref="a", kind="compare"),
                      new=DiffSide(ref="b", kind="compare"), rows=rows)
    assert regressions(diff, 5.0) == []
    assert [r.key["variant"] for r in blind_rows(diff, 5.0)] == ["noisy"]
