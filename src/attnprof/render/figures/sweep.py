"""A sweep drawn: latency and peak memory against the first swept size, log-log, one line
per variant (and per group of the other swept fields), each fitted power law drawn over
the range it was fitted on with the band its exponent's 95% interval allows.

A noisy latency (IQR/median > 10%) is a hollow point; a point not drawn (the variant
failed there, its output was ``wrong``, or the quantity was not measured) is a cross along
the bottom, its status and reason in the tooltip. The fits are the
record's (the scaling pass made them); the band pivots at the middle of the fitted range,
where a log-log fit is best determined.
"""

from __future__ import annotations

from typing import Any

from attnprof.record.sweep import QUANTITIES, Quantity, SweepRecord
from attnprof.render.figures.base import Figure, chart, color_scale
from attnprof.render.sweep_table import describe_fit
from attnprof.workload.grid import INTEGER_FIELDS

__all__ = ["scaling_field", "scaling_plot", "sweep_figures"]

_TITLES = {"latency_ms": "median latency per step (ms)",
           "peak_memory_bytes": "peak memory per step (MiB)"}
_SCALE = {"latency_ms": 1.0, "peak_memory_bytes": 1.0 / (1 << 20)}
_HEIGHT = 320
#: Lines of the per-variant key under a scaling plot's title; the rest is in the tables.
_KEY_LINES = 24


def scaling_field(record: SweepRecord) -> str | None:
    """The field the scaling plots run along: the first swept size (``None``: the sweep
    varies only names, such as dtypes or modes)."""
    return next((f for f in record.grid.fields if f in INTEGER_FIELDS), None)


def sweep_figures(record: SweepRecord) -> list[Figure]:
    """Latency and memory against the swept size; without a swept size, latency per point."""
    field = scaling_field(record)
    if field is None:
        return [_per_point(record)]
    return [Figure(f"scaling-{'latency' if q == 'latency_ms' else 'memory'}",
                   f"{_TITLES[q]} against {field}", _scaling(record, field, q))
            for q in QUANTITIES]


def _group(coords: dict[str, int | str], field: str) -> str:
    return " ".join(f"{k}={v}" for k, v in coords.items() if k != field)


def _scaling(record: SweepRecord, field: str, quantity: Quantity) -> dict[str, Any]:
    scale = _SCALE[quantity]
    points, failed = [], []
    for point in record.ordered_points():
        if field not in point.coords:
            continue
        group = _group(point.coords, field)
        for row in point.results:
            series = row.variant + (f" · {group}" if group else "")
            value = ((row.latency_ms.median if row.latency_ms else None)
                     if quantity == "latency_ms" else row.peak_memory_bytes)
            if row.status == "ok" and value:
                noisy = bool(quantity == "latency_ms" and row.latency_ms
                             and row.latency_ms.noisy)
                points.append({"variant": row.variant, "series": series, "x": point.coords[field],
                               "y": value * scale, "noisy": noisy, "group": group})
            else:  # a wrong row measured, but its numbers are not drawn as if it were ok
                failed.append({"variant": row.variant, "series": series,
                               "x": point.coords[field],
                               "status": row.status if row.status != "ok" else "not measured",
                               "reason": row.reason[:300]})
    fits = [{"variant": f.variant, "series": f.variant + (f" · {_group(f.group, field)}"
                                                          if f.group else ""),
             "lo": f.fitted_range[0], "hi": f.fitted_range[1], "prefactor": f.prefactor * scale,
             "exponent": f.exponent, "ci_lo": (f.ci95 or (f.exponent, f.exponent))[0],
             "ci_hi": (f.ci95 or (f.exponent, f.exponent))[1], "t": [0.0, 0.5, 1.0],
             "caveat": "; ".join(f.caveats)}
            for f in record.fits if f.quantity == quantity and f.field == field]
    variants = record.variants
    color = {"field": "variant", "type": "nominal", "scale": {**color_scale(len(variants)),
                                                              "domain": variants}}
    x = {"type": "quantitative", "scale": {"type": "log"}, "title": field}
    y = {"type": "quantitative", "scale": {"type": "log"}, "title": _TITLES[quantity]}
    dash = {"field": "group", "type": "nominal", "title": "held fixed"}
    groups = {p["group"] for p in points}
    fit_transform: list[dict[str, Any]] = [
        {"flatten": ["t"]},
        {"calculate": "datum.lo * pow(datum.hi / datum.lo, datum.t)", "as": "x"},
        {"calculate": "datum.prefactor * pow(datum.x, datum.exponent)", "as": "fit"},
        {"calculate": "sqrt(datum.lo * datum.hi)", "as": "xc"},
        {"calculate": "datum.prefactor * pow(datum.xc, datum.exponent)", "as": "yc"},
        {"calculate": "datum.yc * pow(datum.x / datum.xc, datum.ci_lo)", "as": "b1"},
        {"calculate": "datum.yc * pow(datum.x / datum.xc, datum.ci_hi)", "as": "b2"},
        {"calculate": "min(datum.b1, datum.b2)", "as": "band_lo"},
        {"calculate": "max(datum.b1, datum.b2)", "as": "band_hi"},
    ]
    layers: list[dict[str, Any]] = [
        {"data": {"values": fits}, "transform": fit_transform,
         "mark": {"type": "area", "opacity": 0.15},
         "encoding": {"x": {"field": "x", **x}, "y": {"field": "band_lo", **y},
                      "y2": {"field": "band_hi"}, "color": {**color, "legend": None},
                      "detail": {"field": "series"}}},
        {"data": {"values": fits}, "transform": fit_transform,
         "mark": {"type": "line", "strokeDash": [5, 3], "strokeWidth": 1},
         "encoding": {"x": {"field": "x", **x}, "y": {"field": "fit", **y}, "color": color,
                      "detail": {"field": "series"},
                      "tooltip": [{"field": "series"}, {"field": "exponent", "format": ".2f"},
                                  {"field": "ci_lo", "format": ".2f", "title": "95% low"},
                                  {"field": "ci_hi", "format": ".2f", "title": "95% high"},
                                  {"field": "caveat"}]}},
        {"data": {"values": points},
         "mark": {"type": "line", "point": {"filled": True, "size": 50}, "tooltip": True},
         "encoding": {"x": {"field": "x", **x}, "y": {"field": "y", **y}, "color": color,
                      "detail": {"field": "series"},
                      **({"strokeDash": dash} if len(groups) > 1 else {})}},
        {"data": {"values": [p for p in points if p["noisy"]]},
         "mark": {"type": "point", "filled": True, "fill": "white", "size": 60,
                  "strokeWidth": 1.5, "tooltip": True},
         "encoding": {"x": {"field": "x", **x}, "y": {"field": "y", **y}, "color": color}},
        {"data": {"values": failed},
         "mark": {"type": "point", "shape": "cross", "size": 80, "filled": True,
                  "tooltip": True},
         "encoding": {"x": {"field": "x", **x}, "y": {"value": _HEIGHT - 6}, "color": color,
                      "tooltip": [{"field": "series"}, {"field": "x", "title": field},
                                  {"field": "status"}, {"field": "reason"}]}},
    ]
    subtitle = [f"dashed: fitted power law over its range, band: the exponent's 95% interval; "
                f"hollow: noisy; ✕ at the bottom: not drawn ({len(failed)})",
                f"{record.environment.device_name} · FLOPs: {record.flops_convention}",
                *_key(record, field, quantity, failed)]
    return {"title": {"text": f"{_TITLES[quantity]} against {field}", "anchor": "start",
                      "subtitle": subtitle},
            "width": 620, "height": _HEIGHT, "layer": layers,
            "resolve": {"scale": {"color": "shared"}}}


def _key(record: SweepRecord, field: str, quantity: Quantity,
         failed: list[dict[str, Any]]) -> list[str]:
    """Per series, in words, what a static image cannot show in a tooltip: its fit (or
    that it ran nowhere) and where it is not drawn, with which status."""
    lines = []
    for variant in record.variants:
        fits = [f for f in record.fits if (f.variant, f.quantity, f.field) ==
                (variant, quantity, field)]
        for f in fits:
            group = _group(f.group, field)
            lines.append(f"{variant}{' · ' + group if group else ''}: {describe_fit(f)}")
        where: dict[str, list[str]] = {}
        for x in failed:
            if x["variant"] == variant:
                where.setdefault(x["status"], []).append(str(x["x"]))
        ran = any((row := p.result(variant)) is not None and row.status == "ok"
                  for p in record.points)
        if not ran:
            lines.append(f"{variant}: ran at no point")
        if where:
            lines.append(f"{variant} not drawn: " + "; ".join(
                f"{status} at {field}={','.join(xs)}" for status, xs in where.items()))
    if len(lines) > _KEY_LINES:
        lines = [*lines[:_KEY_LINES - 1], f"… {len(lines) - _KEY_LINES + 1} more lines: see "
                 "the fits and points tables"]
    return lines


def _per_point(record: SweepRecord) -> Figure:
    """A sweep of names only (dtypes, modes): latency per point and variant."""
    values = [{"point": " ".join(f"{k}={v}" for k, v in p.coords.items()),
               "variant": r.variant, "ms": r.latency_ms.median}
              for p in record.ordered_points() for r in p.results
              if r.status == "ok" and r.latency_ms is not None]
    spec = chart("median latency per step (ms) at each point", values,
                 mark={"type": "bar", "tooltip": True},
                 encoding={"x": {"field": "point", "type": "nominal", "title": None},
                           "xOffset": {"field": "variant"},
                           "y": {"field": "ms", "type": "quantitative", "title": "ms"},
                           "color": {"field": "variant", "type": "nominal",
                                     "scale": color_scale(len(record.variants))}})
    return Figure("points-latency", "Latency at each point", spec)


def scaling_plot(record: SweepRecord) -> Figure:
    """Latency and memory against the swept size side by side: the sweep's ``--plot``."""
    field = scaling_field(record)
    if field is None:
        return _per_point(record)
    return Figure("scaling", f"latency and peak memory against {field}",
                  {"title": {"text": f"attnprof sweep {record.run_id} — "
                                     f"{record.environment.device_name}", "anchor": "start"},
                   "hconcat": [_scaling(record, field, q) for q in QUANTITIES],
                   "spacing": 40})
