"""The CI gate of ``attnprof diff --fail-on-regression PCT``: what counts as a regression.

A row regresses when its latency got significantly slower by more than PCT percent (Holm-
adjusted Mann-Whitney p below alpha), when its peak memory grew by more than PCT percent
(an exact measurement; from 0 B, any growth: judged in bytes, as no ratio exists), or when
it was measured before and fails now (``broken``: an OOM is unbounded memory growth). Rows
only one side has, rows failing on both sides, latencies not judged (one process a side
that moved with every other row) and metrics that are only shown (a share, a layer's time
from one trace) never fail the gate; :func:`judged` says whether the gate judged anything.
"""

from __future__ import annotations

from attnprof.record.diff import DiffRecord, MetricChange, RowDiff

__all__ = ["GATED_METRICS", "blind_rows", "judged", "not_judged", "regressions"]

#: Metrics the gate judges.
GATED_METRICS = ("latency_ms", "peak_memory_bytes")


def blind_rows(diff: DiffRecord, percent: float) -> list[RowDiff]:
    """Rows whose latency test could not have found a slowdown of ``percent`` (too few
    samples for their noise): a gate that passes says so rather than vouch for them."""
    return [row for row in diff.rows for m in row.metrics
            if m.metric == "latency_ms" and m.p_value is not None and (
                m.detectable is False or (m.detectable_change is not None
                                          and m.detectable_change * 100.0 > percent))]


def regressions(diff: DiffRecord, percent: float) -> list[tuple[RowDiff, MetricChange | None]]:
    """Each regressed row with the metric that regressed (``None``: the row broke)."""
    found: list[tuple[RowDiff, MetricChange | None]] = []
    for row in diff.rows:
        if row.state == "broken":
            found.append((row, None))
            continue
        for m in row.metrics:
            change = m.judged_change
            if m.metric in GATED_METRICS and m.worse and (
                    m.grew_from_zero if change is None else change * 100.0 > percent):
                found.append((row, m))
    return found


def judged(diff: DiffRecord) -> bool:
    """Whether the gate judged anything: a gated metric with a verdict, or a row that
    broke. A diff of traces (time per step from one capture a side, shown, not judged)
    judges nothing."""
    return any(row.state == "broken" for row in diff.rows) or any(
        m.metric in GATED_METRICS and m.significant is not None
        for row in diff.rows for m in row.metrics)


def not_judged(diff: DiffRecord) -> list[tuple[RowDiff, MetricChange]]:
    """Gated metrics that were tested but not judged (``MetricChange.not_judged``)."""
    return [(row, m) for row in diff.rows for m in row.metrics
            if m.metric in GATED_METRICS and m.not_judged]
