"""Honest summary statistics over raw latency samples.

Median and inter-quartile range rather than mean and standard deviation: latency
distributions are skewed (a descheduled thread, a GC pause), and the median of a handful of
samples is robust where the mean is not. The raw samples travel with the summary. The
quartiles, the spread and "noisy" are :mod:`attnprof.noise`'s, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnprof import noise

#: IQR/median above this marks a measurement as noisy.
NOISE_THRESHOLD = noise.NOISY


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
        return noise.relative_iqr(self.median, self.iqr)

    @property
    def noisy(self) -> bool:
        return noise.noisy(self.median, self.iqr, self.count)


def summarize(samples: list[float]) -> Summary:
    """Summarise ``samples`` (at least one)."""
    if not samples:
        raise ValueError("no samples to summarise")
    q1, median, q3 = noise.quartiles(samples)
    return Summary(median, q1, q3, min(samples), max(samples), len(samples))
