"""One metric, old against new: the change, and whether it is more than noise.

:func:`sampled` compares raw samples (latency): the test's p-value and whether the counts
can detect anything; Holm's correction is applied later, across the whole diff
(:func:`judge`). :func:`exact` compares a value measured once and deterministically (peak
memory): any difference is real. :func:`informative` shows a value without judging it (a
share, a time read from one trace).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from attnprof.analysis.diff.stats import (
    detectable_change,
    holm,
    mann_whitney_p,
    pooled_spread,
    samples_for,
    smallest_p,
)
from attnprof.record.diff import WATCHED_CHANGE, MetricChange, RowDiff

__all__ = ["exact", "informative", "judge", "relative_change", "sampled"]


def relative_change(old: float | None, new: float | None) -> float | None:
    """``new / old - 1``; ``None`` when either is missing or ``old`` is zero."""
    if old is None or new is None or old == 0:
        return None
    return new / old - 1.0


def sampled(metric: str, unit: str, old: Sequence[float], new: Sequence[float],
            alpha: float) -> MetricChange:
    """Medians, change and the unadjusted Mann-Whitney p-value of two sample sets."""
    old_median = statistics.median(old) if old else None
    new_median = statistics.median(new) if new else None
    if not old or not new:
        return MetricChange(metric=metric, unit=unit, old=old_median, new=new_median,
                            change=relative_change(old_median, new_median),
                            n_old=len(old), n_new=len(new))
    return MetricChange(metric=metric, unit=unit, old=old_median, new=new_median,
                        change=relative_change(old_median, new_median),
                        n_old=len(old), n_new=len(new),
                        p_value=mann_whitney_p(old, new), spread=pooled_spread(old, new),
                        test="samples",
                        detectable=smallest_p(len(old), len(new)) <= alpha)


def exact(metric: str, unit: str, old: float | None, new: float | None) -> MetricChange:
    """A deterministic measurement: significant whenever the values differ."""
    known = old is not None and new is not None
    return MetricChange(metric=metric, unit=unit, old=old, new=new,
                        change=relative_change(old, new), exact=True,
                        significant=(old != new) if known else None)


def informative(metric: str, unit: str, old: float | None, new: float | None, *,
                higher_is_better: bool = False) -> MetricChange:
    """Shown, not judged (``significant`` None)."""
    return MetricChange(metric=metric, unit=unit, old=old, new=new,
                        change=relative_change(old, new), higher_is_better=higher_is_better)


def judge(rows: list[RowDiff], alpha: float) -> None:
    """Holm's correction over every tested metric of ``rows``, then each one's verdict and
    the change it could have detected (in place: the rows were built for this diff)."""
    tested = [m for row in rows for m in row.metrics if m.p_value is not None]
    strictest = alpha / max(1, len(tested))  # what the smallest p of Holm's steps must beat
    for m, adjusted in zip(tested, holm([m.p_value for m in tested if m.p_value is not None]),
                           strict=True):
        m.p_adjusted = adjusted
        m.significant = adjusted < alpha
        if m.test == "processes" and m.spread is not None:
            # The process is the unit, and Welch's t has no rank test's loss of efficiency.
            k_old, k_new = len(m.old_processes), len(m.new_processes)
            m.detectable_change = detectable_change(k_old, k_new, m.spread, strictest,
                                                    efficiency=1.0)
            m.samples_needed = max(2, samples_for(WATCHED_CHANGE, m.spread, strictest,
                                                  efficiency=1.0))
        elif m.spread is not None and m.n_old and m.n_new:
            m.detectable_change = detectable_change(m.n_old, m.n_new, m.spread, strictest)
            m.samples_needed = samples_for(WATCHED_CHANGE, m.spread, strictest)
