"""When two measured latencies differ, and how noisy one is, read from a record's
:class:`~attnprof.record.compare.Latency`: the rule is :mod:`attnprof.noise`'s (crossovers
in a sweep, ties in a recommendation); this module only reads a latency's figures for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnprof.noise import TIE, differ, margin, relative_iqr

if TYPE_CHECKING:
    from attnprof.record.compare import Latency

__all__ = ["TIE", "differ", "margin", "spread"]


def spread(latency: Latency | None) -> float:
    """IQR / median of ``latency`` (0 when unknown)."""
    if latency is None:
        return 0.0
    return relative_iqr(latency.median, latency.iqr)
