"""Honest summary statistics over raw latency samples.

Median and inter-quartile range rather than mean and standard deviation: latency
distributions are skewed (a descheduled thread, a GC pause), and the median of a handful of
samples is robust where the mean is not. The raw samples travel with the summary.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: IQR/median above this marks a measurement as noisy.
NOISE_THRESHOLD = 0.10


@dataclass(frozen=True)
class Summary:
    """Median, quartiles and spread of a list of samples (same unit as the samples)."""

    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float
    count: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def relative_iqr(self) -> float:
        """IQR / median: the spread as a fraction of the typical value."""
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.count >= 2 and self.relative_iqr > NOISE_THRESHOLD


def summarize(samples: list[float]) -> Summary:
    """Summarise ``samples`` (at least one)."""
    if not samples:
        raise ValueError("no samples to summarise")
    if len(samples) == 1:
        x = samples[0]
        return Summary(x, x, x, x, x, 1)
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return Summary(statistics.median(samples), q1, q3, min(samples), max(samples),
                   len(samples))
