"""The one rule for noise: spread, interval and whether two measurements differ beyond it.

Every part of attnprof that summarises samples or tells two numbers apart calls this
module (compare's IQR and "noisy" mark, diff's spread and tests, the recommendation's and
the sweep's ties, the straggler's noise floor, the spread of ``--processes`` medians), so
one set of samples has one IQR wherever it is printed. docs/noise.md states the rule.

* **Quartiles** are the *inclusive* ones (linear interpolation between order statistics:
  Hyndman-Fan type 7, numpy's and R's default, ``statistics.quantiles(method=
  "inclusive")``): defined from two samples on and never outside the samples' range, where
  the exclusive ones extrapolate past the extremes of a handful of samples.
* **Spread** is the inter-quartile range; *relative* spread is IQR / median. Where a test
  needs a standard deviation, the robust one is IQR / 1.349 (a normal distribution's IQR is
  1.349 standard deviations), so one descheduled call does not count like a hundred slow
  ones.
* **Interval**: the samples' middle half, [q1, q3].
* **Differs beyond noise**, two rules with one threshold between them:
  - from summaries (two medians and their relative spreads, :func:`differ`): the ratio of
    the medians exceeds both :data:`TIE` (5%: variants running the same kernels wobble by
    that much from run to run) and the larger relative spread;
  - from samples (:func:`verdict`): that, *and* a two-sided Mann-Whitney U test finds the
    samples different at ``alpha``. ``attnprof diff`` uses the same tests
    (:func:`mann_whitney_p` on samples, :func:`welch_p` on processes' log medians) with
    Holm's correction across its rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

__all__ = ["ALPHA", "IQR_PER_SIGMA", "NOISY", "TIE", "Verdict", "differ", "interval", "iqr",
           "mann_whitney_p", "margin", "noisy", "quartiles", "relative_iqr", "relative_range",
           "robust_spread", "verdict", "welch_p"]

#: Ratios of medians within 5% are a tie whatever the spread.
TIE = 0.05
#: A relative spread (IQR / median) above this marks a measurement as noisy.
NOISY = 0.10
#: A normal distribution's IQR in standard deviations.
IQR_PER_SIGMA = 1.349
#: The significance level :func:`verdict` tests at unless told.
ALPHA = 0.05


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """(q1, median, q3) of ``samples`` (at least one), inclusive quartiles (module doc)."""
    if not samples:
        raise ValueError("no samples to take quartiles of")
    if len(samples) == 1:
        x = float(samples[0])
        return x, x, x
    import statistics  # here: a module of records every command imports (1 ms)

    q1, q2, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return q1, q2, q3


def iqr(samples: Sequence[float]) -> float:
    """The inter-quartile range of ``samples`` (0 for fewer than two)."""
    q1, _, q3 = quartiles(samples)
    return q3 - q1


def interval(samples: Sequence[float]) -> tuple[float, float]:
    """The middle half of ``samples``: (q1, q3)."""
    q1, _, q3 = quartiles(samples)
    return q1, q3


def relative_iqr(median: float, spread: float) -> float:
    """IQR / median from a summary's figures (0 when the median is not positive: no
    ratio to scale by)."""
    return spread / median if median > 0 else 0.0


def noisy(median: float, spread: float, count: int) -> bool:
    """Whether a summary's relative IQR is above :data:`NOISY` (never with one sample)."""
    return count >= 2 and relative_iqr(median, spread) > NOISY


def robust_spread(samples: Sequence[float]) -> float:
    """A robust relative standard deviation: IQR / 1.349 / median (NaN for fewer than four
    samples, too few to estimate one, or a median that is not positive)."""
    if len(samples) < 4:
        return math.nan
    q1, median, q3 = quartiles(samples)
    return (q3 - q1) / IQR_PER_SIGMA / median if median > 0 else math.nan


def relative_range(values: Sequence[float]) -> float | None:
    """(max - min) / median of a few values (processes' medians): with two to five of
    them the range is all there is; ``None`` for fewer than two or a median <= 0."""
    if len(values) < 2:
        return None
    import statistics

    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle > 0 else None


def margin(*spreads: float) -> float:
    """The relative difference below which medians with these relative spreads tie."""
    return max((TIE, *spreads))


def differ(a: float, b: float, *spreads: float) -> bool:
    """Whether positive medians ``a`` and ``b`` differ beyond the noise: their ratio is
    beyond :func:`margin` of ``spreads`` (their relative spreads)."""
    return abs(math.log(a / b)) > math.log1p(margin(*spreads))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided Mann-Whitney U p-value of ``a`` against ``b`` (1.0 when every sample
    of both sides is equal, where the test has nothing to rank). The exact distribution is
    used for small samples without ties, the normal approximation (with tie and continuity
    corrections) otherwise, as scipy chooses."""
    from scipy.stats import mannwhitneyu  # scipy costs 0.1-0.3 s to import: only here

    if len(a) == 0 or len(b) == 0:
        raise ValueError("both sides need samples")
    if min(a) == max(a) == min(b) == max(b):
        return 1.0
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Welch's two-sided t-test p-value (1.0 when neither side varies, or too few)."""
    from scipy.stats import ttest_ind  # scipy costs 0.1-0.3 s to import: only here

    if len(a) < 2 or len(b) < 2:
        return 1.0
    p = float(ttest_ind(a, b, equal_var=False).pvalue)
    return 1.0 if math.isnan(p) else min(1.0, p)


class Verdict(msgspec.Struct, frozen=True):
    """Two sets of samples told apart (or not): see :func:`verdict`."""

    #: median(b) / median(a) - 1 (``None`` when median(a) is not positive).
    change: float | None
    #: The two-sided Mann-Whitney U p-value.
    p_value: float
    #: The tie margin the change had to exceed: max(TIE, each side's IQR / median).
    margin: float
    #: Beyond the margin *and* p <= alpha.
    differs: bool

    def said(self) -> str:
        """``"tie (p=0.41)"`` or ``"+12% (p=0.003)"``: how a table shows the verdict."""
        change = "n/a" if self.change is None else f"{self.change:+.0%}"
        return f"{change if self.differs else 'tie'} (p={self.p_value:.2g})"


def verdict(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> Verdict:
    """Whether samples ``b`` differ from samples ``a`` beyond the noise (module doc): the
    medians' ratio beyond max(TIE, either side's relative IQR) and a Mann-Whitney p-value
    at most ``alpha``. For positive samples (times, bytes)."""
    qa, qb = quartiles(a), quartiles(b)
    spreads = (relative_iqr(qa[1], qa[2] - qa[0]), relative_iqr(qb[1], qb[2] - qb[0]))
    p = mann_whitney_p(a, b)
    within = margin(*spreads)
    if qa[1] <= 0 or qb[1] <= 0:
        return Verdict(change=None, p_value=p, margin=within, differs=False)
    return Verdict(change=qb[1] / qa[1] - 1.0, p_value=p, margin=within,
                   differs=p <= alpha and differ(qa[1], qb[1], *spreads))
