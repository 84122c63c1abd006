"""One rule for noise (issue 31, item 3): one module computes quartiles, IQR, the tests and
"differs beyond noise"; compare's IQR and diff's spread are the same figure on the same
samples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import attnprof
from attnprof.analysis.diff.metrics import sampled
from attnprof.measure.stats import summarize

SRC = Path(attnprof.__file__).resolve().parent
#: What computing quartiles, an IQR or a test of difference looks like in this code base.
IMPLEMENTATIONS = re.compile(
    r"statistics\.quantiles|\bquantiles\(|\.quantile\(|percentile\(|mannwhitneyu|ttest_ind"
    r"|^def (differ|iqr|quartiles|mann_whitney_p|welch_p)\b|quartiles\[2\]", re.MULTILINE)
#: Skewed samples, where inclusive and exclusive quartiles disagree (2..4 against 1.5..7).
SKEWED = [1.0, 2.0, 3.0, 4.0, 10.0]


def test_one_module_implements_quartiles_iqr_and_the_tests() -> None:
    found = sorted(str(path.relative_to(SRC)) for path in SRC.rglob("*.py")
                   if IMPLEMENTATIONS.search(path.read_text(encoding="utf-8")))
    assert found == ["noise.py"]


def test_compare_iqr_and_diff_spread_agree_on_the_same_samples() -> None:
    summary = summarize(SKEWED)  # what compare records and prints
    diffed = sampled("latency_ms", "ms", SKEWED, SKEWED, alpha=0.05)  # what diff records
    assert (summary.q1, summary.median, summary.q3) == (2.0, 3.0, 4.0)  # inclusive
    assert diffed.spread is not None
    # diff states its spread as a standard deviation: IQR / 1.349, over the median.
    assert diffed.spread * 1.349 == pytest.approx(summary.relative_iqr)
    assert summary.iqr == 2.0


def test_quartiles_stay_inside_the_samples() -> None:
    from attnprof import noise

    # Exclusive quartiles of two samples fall outside them; the inclusive ones do not.
    assert noise.quartiles([1.0, 3.0]) == (1.5, 2.0, 2.5)
    assert noise.quartiles([7.0]) == (7.0, 7.0, 7.0)
    assert noise.interval([1.0, 2.0, 3.0, 4.0, 5.0]) == (2.0, 4.0)
    with pytest.raises(ValueError):
        noise.quartiles([])


def test_differ_needs_more_than_the_tie_and_the_spread() -> None:
    from attnprof import noise

    assert not noise.differ(100.0, 104.0)  # within 5%
    assert noise.differ(100.0, 106.0)
    assert not noise.differ(100.0, 106.0, 0.08)  # within an 8% spread
    assert noise.margin(0.02, 0.08) == 0.08


def test_verdict_of_samples() -> None:
    from attnprof import noise

    base = [10.0 + 0.01 * i for i in range(20)]
    slower = [x * 1.2 for x in base]
    same = [x + 0.005 for x in base]  # a real but tiny shift: tight, yet within 5%
    ranked = noise.verdict(base, slower)
    assert ranked.differs and ranked.change == pytest.approx(0.2)
    assert ranked.said().startswith("+20% (p=")
    tie = noise.verdict(base, same)
    assert not tie.differs and tie.said().startswith("tie (p=")
    assert noise.verdict([1.0] * 4, [1.0] * 4).p_value == 1.0


def test_relative_range_of_process_medians() -> None:
    from attnprof import noise

    assert noise.relative_range([9.0, 10.0, 12.0]) == pytest.approx(0.3)
    assert noise.relative_range([10.0]) is None
