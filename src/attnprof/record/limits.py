"""The record of ``attnprof limits`` (kind ``limits``): per variant and mode, the largest
size found to fit a memory budget, every probe the search ran, the confirming run and the
textbook estimate beside it (:mod:`attnprof.run.limits` fills it)."""

from __future__ import annotations

from typing import Any

import msgspec

from attnprof.formatting import format_bytes
from attnprof.record.base import Listing, RecordBase
from attnprof.record.compare import Bytes, VariantResult
from attnprof.record.environment import Environment
from attnprof.workload.problem import Workload

__all__ = ["LIMITS_COLUMNS", "Ceiling", "LimitsRecord", "Probe", "limits_lines"]


class Probe(msgspec.Struct, frozen=True):
    """One real run: the size tried, how it ended, its peak memory when it ran, and
    whether it fits the budget (:func:`~attnprof.analysis.memory_fit.fits`)."""

    size: int
    status: str
    reason: str = ""
    peak_memory_bytes: Bytes | None = None
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


#: The limits' flat table: one line per variant and mode searched.
LIMITS_COLUMNS = ("variant", "mode", "field", "budget_bytes", "largest", "search_low",
                  "search_high", "first_failure_size", "first_failure_status",
                  "first_failure_reason", "analytic", "analytic_ratio", "confirmed_median_ms",
                  "confirmed_peak_memory_bytes", "probes", "unsupported", "created")


class LimitsRecord(RecordBase, tag="limits"):
    """``attnprof limits``: the ceilings of every variant and mode searched."""

    environment: Environment
    #: The workload searched from (its ``field`` is what varies).
    base: Workload
    field: str
    budget_bytes: int
    ceilings: list[Ceiling] = msgspec.field(default_factory=list)

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per variant and mode searched."""
        return LIMITS_COLUMNS, limits_lines(self)

    def headline(self) -> str:
        """The largest ``field`` that fits per variant and mode, the largest first."""
        found = sorted((c for c in self.ceilings if c.largest is not None),
                       key=lambda c: -(c.largest or 0))
        if not found:
            return f"No variant fit at any {self.field} searched."
        best = found[0]
        rest = ", ".join(f"{c.variant} {c.largest}" for c in found[1:5])
        return (f"{best.variant} ({best.mode}) fits the largest {self.field}: {best.largest}"
                + (f"; then {rest}." if rest else "."))

    def subject(self) -> str:
        """The workload searched from and the field that varies."""
        return f"{self.base.describe()} · largest {self.field}"

    def listing(self) -> Listing:
        """The field searched, within which budget, from which workload; the variants."""
        return Listing(summary=f"largest {self.field} within "
                               f"{format_bytes(self.budget_bytes)} from {self.base.describe()}",
                       names=tuple(dict.fromkeys(c.variant for c in self.ceilings)))


def limits_lines(record: LimitsRecord) -> list[dict[str, Any]]:
    """Limits: one line per variant and mode searched."""
    lines = []
    for c in record.ceilings:
        fail, confirmed = c.first_failure, c.confirmed
        lat = confirmed.latency_ms if confirmed else None
        lines.append({
            "variant": c.variant, "mode": c.mode, "field": c.field,
            "budget_bytes": c.budget_bytes, "largest": c.largest, "search_low": c.search[0],
            "search_high": c.search[1], "first_failure_size": fail.size if fail else None,
            "first_failure_status": fail.status if fail else None,
            "first_failure_reason": fail.reason if fail else None, "analytic": c.analytic,
            "analytic_ratio": c.analytic_ratio,
            "confirmed_median_ms": lat.median if lat else None,
            "confirmed_peak_memory_bytes": confirmed.peak_memory_bytes if confirmed else None,
            "probes": len(c.probes), "unsupported": c.unsupported, "created": record.created})
    return lines
