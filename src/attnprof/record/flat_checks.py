"""The flat tables of the verdict records (see :mod:`attnprof.record.flat`): one line per
expectation (a check) and per variant and mode (limits), values unrounded, ``None`` where
absent."""

from __future__ import annotations

from typing import Any

from attnprof.record.check import CheckRecord
from attnprof.record.limits import LimitsRecord

__all__ = ["CHECK_COLUMNS", "LIMITS_COLUMNS", "check_lines", "limits_lines"]

CHECK_COLUMNS = ("what", "expected", "observed", "ok", "detail", "region", "target",
                 "expectations", "created")
LIMITS_COLUMNS = ("variant", "mode", "field", "budget_bytes", "largest", "search_low",
                  "search_high", "first_failure_size", "first_failure_status",
                  "first_failure_reason", "analytic", "analytic_ratio", "confirmed_median_ms",
                  "confirmed_peak_memory_bytes", "probes", "unsupported", "created")


def check_lines(record: CheckRecord) -> list[dict[str, Any]]:
    """A check: one line per expectation."""
    shared = {"region": record.region, "target": record.target,
              "expectations": record.expectations, "created": record.created}
    return [{"what": r.what, "expected": r.expected, "observed": r.observed, "ok": r.ok,
             "detail": r.detail, **shared} for r in record.rows]


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
