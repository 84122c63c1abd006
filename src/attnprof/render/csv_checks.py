"""CSV of the verdict records: one line per expectation (a check) and per variant and
mode (limits), unrounded, an absent value an empty cell."""

from __future__ import annotations

import csv
import io
from typing import Any

from attnprof.record.check import CheckRecord
from attnprof.record.limits import LimitsRecord

__all__ = ["CHECK_COLUMNS", "LIMITS_COLUMNS", "render_check_csv", "render_limits_csv"]

CHECK_COLUMNS = ("what", "expected", "observed", "ok", "detail", "region", "target",
                 "expectations", "created")
LIMITS_COLUMNS = ("variant", "mode", "field", "budget_bytes", "largest", "search_low",
                  "search_high", "first_failure_size", "first_failure_status",
                  "first_failure_reason", "analytic", "analytic_ratio", "confirmed_median_ms",
                  "confirmed_peak_memory_bytes", "probes", "unsupported", "created")


def _table(columns: tuple[str, ...], lines: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return out.getvalue()


def render_check_csv(record: CheckRecord) -> str:
    """A header and one line per expectation."""
    shared = {"region": record.region, "target": record.target,
              "expectations": record.expectations, "created": record.created}
    return _table(CHECK_COLUMNS, [{"what": r.what, "expected": r.expected,
                                   "observed": r.observed, "ok": r.ok, "detail": r.detail,
                                   **shared} for r in record.rows])


def render_limits_csv(record: LimitsRecord) -> str:
    """A header and one line per variant and mode searched."""
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
    return _table(LIMITS_COLUMNS, lines)
