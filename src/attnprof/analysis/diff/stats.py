"""The statistics of a diff, benchstat's way: a two-sided Mann-Whitney U test per row on the
raw samples, Holm's correction across rows, and what sample counts can detect at all.

Mann-Whitney U assumes nothing about the shape of the distributions (latency samples are
skewed, with a long tail of descheduled calls), only that larger values on one side are
more likely than on the other; it is what Go's benchstat uses. Holm-Bonferroni keeps the
chance of any false alarm in a diff of many rows at ``alpha``, and is never less powerful
than plain Bonferroni.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["holm", "mann_whitney_p", "smallest_p"]


def mann_whitney_p(old: Sequence[float], new: Sequence[float]) -> float:
    """The two-sided Mann-Whitney U p-value of ``old`` against ``new`` (1.0 when every
    sample of both sides is equal, where the test has nothing to rank). The exact
    distribution is used for small samples without ties, the normal approximation (with
    tie and continuity corrections) otherwise, as scipy chooses."""
    from scipy.stats import mannwhitneyu  # scipy costs 0.1-0.3 s to import: only here

    if len(old) == 0 or len(new) == 0:
        raise ValueError("both sides need samples")
    if min(old) == max(old) == min(new) == max(new):
        return 1.0
    p = float(mannwhitneyu(old, new, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


def smallest_p(n_old: int, n_new: int) -> float:
    """The smallest two-sided p-value the test can give with these sample counts (every
    sample of one side below every sample of the other): ``2 / C(n_old + n_new, n_old)``.
    Above ``alpha``, no difference, however large, can be found significant."""
    if n_old <= 0 or n_new <= 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n_old + n_new, n_old))


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
