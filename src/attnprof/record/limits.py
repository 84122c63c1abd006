"""The record of ``attnprof limits`` (kind ``limits``): per variant and mode, the largest
size found to fit a memory budget, every probe the search ran, the confirming run and the
textbook estimate beside it (:mod:`attnprof.run.limits` fills it)."""

from __future__ import annotations

import msgspec

from attnprof.record.base import RecordBase
from attnprof.record.compare import VariantResult
from attnprof.record.environment import Environment
from attnprof.spec.workload import Workload

__all__ = ["Ceiling", "LimitsRecord", "Probe"]


class Probe(msgspec.Struct, frozen=True):
    """One real run: the size tried, how it ended, its peak memory when it ran, and
    whether it fits the budget (:func:`~attnprof.analysis.memory_fit.fits`)."""

    size: int
    status: str
    reason: str = ""
    peak_memory_bytes: int | None = None
    fits: bool = False


class Ceiling(msgspec.Struct, kw_only=True):
    """What the search found for one variant in one mode."""

    variant: str
    mode: str
    field: str
    budget_bytes: int
    search: tuple[int, int]
    #: Largest size that fit (and was confirmed), or None when not even the smallest did.
    largest: int | None = None
    #: The smallest size seen not to fit, and how it failed (None: fits to the search end).
    first_failure: Probe | None = None
    probes: list[Probe] = msgspec.field(default_factory=list)
    #: The final measurement at ``largest``.
    confirmed: VariantResult | None = None
    #: The largest size the textbook estimate allows.
    analytic: int | None = None
    unsupported: str | None = None

    @property
    def analytic_ratio(self) -> float | None:
        """analytic / measured ceiling (> 1: the estimate promises more than fits)."""
        if self.analytic is None or not self.largest or self.first_failure is None:
            return None
        return self.analytic / self.largest


class LimitsRecord(RecordBase, tag="limits"):
    """``attnprof limits``: the ceilings of every variant and mode searched."""

    environment: Environment
    #: The workload searched from (its ``field`` is what varies).
    base: Workload
    field: str
    budget_bytes: int
    ceilings: list[Ceiling] = msgspec.field(default_factory=list)
