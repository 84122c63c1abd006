"""When two measured latencies differ, and how noisy one is: the rule every comparison
of numbers across rows uses (crossovers in a sweep, ties in a recommendation).

Two medians are told apart only when their ratio exceeds both :data:`TIE` (5%: two
variants that run the same kernels wobble by that much from run to run) and the larger of
the two measurements' relative spreads (inter-quartile range over median): a difference
smaller than the spread of the samples it comes from is not a measured order.
"""

from __future__ import annotations

import math

from attnprof.record.compare import Latency

__all__ = ["TIE", "differ", "margin", "spread"]

#: Ratios within 5% are a tie whatever the spread.
TIE = 0.05


def spread(latency: Latency | None) -> float:
    """IQR / median of ``latency`` (0 when unknown)."""
    if latency is None or latency.median <= 0:
        return 0.0
    return latency.iqr / latency.median


def margin(*spreads: float) -> float:
    """The relative difference below which medians with these spreads tie."""
    return max(TIE, *spreads)


def differ(a: float, b: float, *spreads: float) -> bool:
    """Whether positive medians ``a`` and ``b`` differ beyond the noise (see the module
    doc); ``spreads``: their relative spreads."""
    return abs(math.log(a / b)) > math.log1p(margin(*spreads))
