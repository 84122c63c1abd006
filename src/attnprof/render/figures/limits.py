"""Memory ceilings drawn: the largest size each variant fits, per mode, with the textbook
estimate marked beside it."""

from __future__ import annotations

from attnprof.formatting import format_bytes
from attnprof.record.limits import LimitsRecord
from attnprof.render.figures.base import Figure, chart

__all__ = ["limits_figures"]


def limits_figures(record: LimitsRecord) -> list[Figure]:
    """One chart: measured ceilings as bars, textbook estimates as ticks."""
    values = [{"variant": c.variant, "mode": c.mode, "largest": c.largest,
               "estimate": c.analytic,
               "note": c.unsupported or ("fits to the search's end" if c.first_failure is None
                                         else "")}
              for c in record.ceilings]
    order = list(dict.fromkeys(c.variant for c in record.ceilings))
    y = {"field": "variant", "type": "nominal", "sort": order, "title": None}
    x = {"type": "quantitative", "title": f"largest {record.field}"}
    spec = chart(f"largest {record.field} within {format_bytes(record.budget_bytes)}",
                 values, height=max(60, 30 * len(order)),
                 subtitle=["bars: measured on real runs; black ticks: the textbook estimate"],
                 layer=[{"mark": {"type": "bar", "tooltip": True},
                         "encoding": {"y": y, "yOffset": {"field": "mode"},
                                      "x": {"field": "largest", **x},
                                      "color": {"field": "mode", "type": "nominal"}}},
                        {"mark": {"type": "tick", "color": "black", "thickness": 2},
                         "encoding": {"y": y, "yOffset": {"field": "mode"},
                                      "x": {"field": "estimate", **x}}}])
    return [Figure("limits", "Memory ceilings", spec)]
