"""Judging latency when each side was measured in several processes (``--processes``):
the process, not the sample, is the unit.

Within one process, samples are tight; between processes, the whole process runs faster
or slower (on the 2-core development VM, unchanged code moved every variant 4-29% at once
between fresh processes, and single variants 10-20%), which no count of one process's
samples can show, so a sample test of two single runs calls that noise significant
(benchmarks/bench_diff_noise.py: 54% of unchanged rows). With several processes a side,
each process's median is one observation of how fast the variant runs, and the test asks
whether the new side's medians differ from the old side's by more than they differ among
themselves: Welch's t-test on log medians (a ratio is what changes; Welch because the two
sides' spreads need not match).

Every process measures all of a record's rows in the same interleaved rounds, so much of
what moves a process moves all its rows together. With four rows or more, each process's
speed is estimated, for each row, as the median over the *other* rows of their log median
against their centre over both sides, and taken out before the test: a change confined to
one row (what a code change to one variant does) stays, the process's speed goes. What every row
shares is reported apart (:func:`common_speed`): a machine that slowed down, or a change
that touched every variant alike (a new torch), which one diff cannot tell apart.
"""

from __future__ import annotations

import math
import statistics

from attnprof.noise import welch_p
from attnprof.record.compare import Latency
from attnprof.record.diff import MetricChange, RowDiff

__all__ = ["COMMON_SHIFT", "MIN_ROWS_FOR_SPEED", "ONE_PROCESS", "ONE_PROCESS_FLOOR",
           "common_speed", "judge_processes", "process_latency", "unjudge_process_moves", "welch_p"]

#: Why a latency tested on one process a side was not judged.
ONE_PROCESS = "1 process a side"

#: Rows whose latencies all moved one way by at least this much read as a change of the
#: machine's or the process's speed between the runs (benchmarks/bench_diff_noise.py: on
#: a 2-core VM, unchanged code in a fresh process ran every variant 4-29% faster or slower
#: together, while each run's own samples were tight enough to call that significant).
COMMON_SHIFT = 0.03
#: Rows a record needs for each process's speed to be estimated from them: each row's from
#: the three or more others, whose median one changed row does not move.
MIN_ROWS_FOR_SPEED = 4
#: The largest change one process a side is judged below: one variant alone, unchanged,
#: ran 0.95-1.29x its other processes' median in fresh processes on a quiet 2-core VM
#: (benchmarks/README.md, "diff, false alarms and detection"), which no count of one
#: process's samples can see; two identical back-to-back runs read naive -9.8%, p=0.000.
ONE_PROCESS_FLOOR = 0.30


def process_latency(metric: str, old: Latency, new: Latency) -> MetricChange:
    """A latency whose sides both have several processes: medians, change, the process
    medians; the test itself is :func:`judge_processes`'s (it needs every row)."""
    change = new.median / old.median - 1.0 if old.median else None
    return MetricChange(metric=metric, unit="ms", old=old.median, new=new.median,
                        change=change, n_old=old.count, n_new=new.count, test="processes",
                        old_processes=list(old.process_medians),
                        new_processes=list(new.process_medians))


def _tested(rows: list[RowDiff]) -> list[MetricChange]:
    return [m for row in rows for m in row.metrics if m.test == "processes"
            and len(m.old_processes) >= 2 and len(m.new_processes) >= 2]


def _deviations(metrics: list[MetricChange]
                ) -> tuple[list[list[float]], list[list[float]]] | None:
    """Each row's log process medians against its centre over both sides, old side and
    new (``None`` when the rows are too few for a speed, or their process counts differ:
    then they were not measured in the same processes)."""
    if len(metrics) < MIN_ROWS_FOR_SPEED:
        return None
    k_old, k_new = len(metrics[0].old_processes), len(metrics[0].new_processes)
    if any(len(m.old_processes) != k_old or len(m.new_processes) != k_new for m in metrics):
        return None
    old, new = [], []
    for m in metrics:
        centre = statistics.median(math.log(x) for x in (*m.old_processes, *m.new_processes))
        old.append([math.log(x) - centre for x in m.old_processes])
        new.append([math.log(x) - centre for x in m.new_processes])
    return old, new


def _speed(side: list[list[float]], process: int, leave_out: int | None = None) -> float:
    """One process's log speed: the median deviation of its rows (but ``leave_out``)."""
    return statistics.median(d[process] for j, d in enumerate(side) if j != leave_out)


def _speeds(metrics: list[MetricChange]) -> list[tuple[list[float], list[float]]] | None:
    """For each row of ``metrics``, each process's log speed on the old side and on the
    new, estimated from the *other* rows (``None`` as :func:`_deviations`). Leaving the
    row out keeps its own noise, and its own change, out of what is taken from it."""
    found = _deviations(metrics)
    if found is None:
        return None
    old, new = found
    return [([_speed(old, p, j) for p in range(len(old[0]))],
             [_speed(new, p, j) for p in range(len(new[0]))]) for j in range(len(metrics))]


def judge_processes(rows: list[RowDiff]) -> None:
    """Each ``processes`` latency's unadjusted p-value, spread and adjusted change (in
    place; Holm's correction follows with every other test, in ``metrics.judge``)."""
    metrics = _tested(rows)
    if not metrics or any(x <= 0 for m in metrics
                          for x in (*m.old_processes, *m.new_processes)):
        for m in metrics:
            m.test = None  # a non-positive median: nothing a ratio can judge
        return
    speeds = _speeds(metrics)
    for j, m in enumerate(metrics):
        old = _logs(m.old_processes, speeds[j][0] if speeds else None)
        new = _logs(m.new_processes, speeds[j][1] if speeds else None)
        m.p_value = welch_p(old, new)
        m.spread = math.sqrt((statistics.variance(old) + statistics.variance(new)) / 2)
        if speeds:
            m.adjusted_change = math.exp(statistics.fmean(new) - statistics.fmean(old)) - 1


def _logs(medians: list[float], speeds: list[float] | None) -> list[float]:
    """Log medians, each process's speed taken out when known."""
    return [math.log(x) - (speeds[p] if speeds else 0.0) for p, x in enumerate(medians)]


def common_speed(rows: list[RowDiff], alpha: float) -> list[str]:
    """A warning when the processes of one side ran every row faster or slower together,
    by more than the processes of a side differ among themselves."""
    found = _deviations(_tested(rows))
    if found is None:
        return []
    old = [_speed(found[0], p) for p in range(len(found[0][0]))]
    new = [_speed(found[1], p) for p in range(len(found[1][0]))]
    p = welch_p(old, new)
    change = math.exp(statistics.fmean(new) - statistics.fmean(old)) - 1
    if p >= alpha or abs(change) < COMMON_SHIFT:
        return []
    return [f"every row ran {abs(change):.0%} {'slower' if change > 0 else 'faster'} "
            f"together in the new run's processes (p={p:.2g}): the machine's speed, or a "
            "change that touched every variant alike (a new torch: see the changes above), "
            "which one diff cannot tell apart; each row is judged beside it (the "
            "'beside speed' change)"]


def unjudge_process_moves(rows: list[RowDiff]) -> None:
    """With one process a side, a significant latency change is not judged
    (``not_judged`` = :data:`ONE_PROCESS`), whatever its p-value, when one process's
    samples cannot tell it from the process's speed: when it is smaller than
    :data:`ONE_PROCESS_FLOOR` (how far one variant alone moves between fresh processes of
    unchanged code), or when the other rows moved the same way by :data:`COMMON_SHIFT` or
    more (the whole process ran at another speed). Only a change beyond both keeps its
    verdict, with the diff's warning beside it. In place, after Holm's correction."""
    tested = [m for row in rows if (m := row.metric("latency_ms")) is not None
              and m.test == "samples" and m.change is not None and m.change > -1]
    logs = [math.log1p(m.change) for m in tested if m.change is not None]
    for k, m in enumerate(tested):
        if not m.significant:
            continue
        others = logs[:k] + logs[k + 1:]
        shared = statistics.median(others) if others else 0.0
        moved_together = (abs(shared) >= math.log1p(COMMON_SHIFT)
                          and (shared > 0) == (logs[k] > 0))
        if abs(logs[k]) < math.log1p(ONE_PROCESS_FLOOR) or moved_together:
            m.significant, m.not_judged = None, ONE_PROCESS
