"""The statistics of a diff, benchstat's way: a two-sided Mann-Whitney U test per row on the
raw samples, Holm's correction across rows, and what sample counts can detect at all.

Mann-Whitney U assumes nothing about the shape of the distributions (latency samples are
skewed, with a long tail of descheduled calls), only that larger values on one side are
more likely than on the other; it is what Go's benchstat uses. Holm-Bonferroni keeps the
chance of any false alarm in a diff of many rows at ``alpha``, and is never less powerful
than plain Bonferroni. The test and the spread are :mod:`attnprof.noise`'s, the one rule
for noise; this module adds what a diff of many rows needs beside them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from attnprof.noise import mann_whitney_p, robust_spread

__all__ = ["POWER", "detectable_change", "holm", "mann_whitney_p", "pooled_spread",
           "relative_spread", "samples_for", "smallest_p"]

#: The power the detectable change is stated at: found 4 times in 5.
POWER = 0.8
#: Mann-Whitney's efficiency against the t-test on normal data (3/pi): it needs about 5%
#: more samples than a t-test for the same power.
_EFFICIENCY = 3 / math.pi


def smallest_p(n_old: int, n_new: int) -> float:
    """The smallest two-sided p-value the test can give with these sample counts (every
    sample of one side below every sample of the other): ``2 / C(n_old + n_new, n_old)``.
    Above ``alpha``, no difference, however large, can be found significant."""
    if n_old <= 0 or n_new <= 0:
        return 1.0
    # int / int: exact even where the count of orderings is past a float's range (a few
    # hundred samples a side), where 2.0 / comb raises OverflowError.
    return min(1.0, 2 / math.comb(n_old + n_new, n_old))


def relative_spread(samples: Sequence[float]) -> float:
    """A robust relative standard deviation, :func:`attnprof.noise.robust_spread`: IQR /
    1.349 / median from the same quartiles as compare's IQR."""
    return robust_spread(samples)


def _z(alpha: float, power: float) -> float:
    from statistics import NormalDist

    unit = NormalDist()
    return unit.inv_cdf(1 - alpha / 2) + unit.inv_cdf(power)


def pooled_spread(old: Sequence[float], new: Sequence[float]) -> float | None:
    """The two sides' relative spreads pooled (root mean square); ``None`` when either
    side has too few samples to estimate one."""
    spread = math.sqrt((relative_spread(old) ** 2 + relative_spread(new) ** 2) / 2)
    return None if math.isnan(spread) else spread


def detectable_change(n_old: int, n_new: int, spread: float, alpha: float,
                      power: float = POWER, efficiency: float = _EFFICIENCY) -> float:
    """The smallest relative change of the median the test finds at ``alpha`` with
    ``power``, given the sample counts and the pooled relative spread (normal
    approximation; ``efficiency``: Mann-Whitney's by default, 1 for a t-test): a real
    change below it likely reads "~"."""
    return _z(alpha, power) * spread * math.sqrt(1 / n_old + 1 / n_new) / math.sqrt(
        efficiency)


def samples_for(change: float, spread: float, alpha: float, power: float = POWER,
                efficiency: float = _EFFICIENCY) -> int:
    """Samples per side the test needs to find a relative ``change`` with ``power``, at a
    relative spread ``spread`` (the inverse of :func:`detectable_change`)."""
    return math.ceil(2 * (_z(alpha, power) * spread / change) ** 2 / efficiency)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given: the k-th smallest of m is
    multiplied by m - k + 1, then made non-decreasing in that order, capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
