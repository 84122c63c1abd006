"""A comparison drawn: latency per variant (median and IQR), peak memory per variant, and
the roofline — achieved FLOP/s against arithmetic intensity under the matmul and copy
ceilings measured in the same run."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from attnprof.record.compare import CompareRecord
from attnprof.render.figures.base import Figure, chart, color_scale

__all__ = ["compare_figures", "roofline_points"]

_MIB = float(1 << 20)


def compare_figures(record: CompareRecord) -> list[Figure]:
    """Latency, memory and (when the run measured its ceilings) the roofline."""
    figures = [_latency(record), _memory(record)]
    roofline = _roofline(record)
    if roofline is not None:
        figures.append(roofline)
    return figures


def _latency(record: CompareRecord) -> Figure:
    values = [{"variant": r.variant, "median": r.latency_ms.median, "q1": r.latency_ms.q1,
               "q3": r.latency_ms.q3, "noisy": "noisy" if r.latency_ms.noisy else "steady"}
              for r in record.results if r.status == "ok" and r.latency_ms is not None]
    missing = [f"{r.variant}: {r.status}" for r in record.results if r.status != "ok"]
    order = [r.variant for r in record.results]
    y = {"field": "variant", "type": "nominal", "sort": order, "title": None}
    spec = chart(
        "median latency per step (ms), whiskers: IQR", values,
        height=max(60, 22 * len(order)),
        subtitle=_subtitle(record.workload.describe(), missing),
        layer=[
            {"mark": {"type": "bar", "tooltip": True},
             "encoding": {"y": y, "x": {"field": "median", "type": "quantitative",
                                        "title": "ms"},
                          "color": {"field": "noisy", "type": "nominal",
                                    "scale": {"domain": ["steady", "noisy"],
                                              "range": ["#4c78a8", "#f58518"]},
                                    "title": "IQR/median > 10%"}}},
            {"mark": {"type": "rule", "color": "black"},
             "encoding": {"y": y, "x": {"field": "q1", "type": "quantitative"},
                          "x2": {"field": "q3"}}},
        ])
    return Figure("latency", "Latency per variant", spec)


def _memory(record: CompareRecord) -> Figure:
    values = [{"variant": r.variant, "MiB": r.peak_memory_bytes / _MIB,
               "method": r.peak_memory_method or ""}
              for r in record.results if r.peak_memory_bytes is not None]
    order = [r.variant for r in record.results]
    missing = [r.variant for r in record.results if r.peak_memory_bytes is None]
    spec = chart("peak memory per step (MiB)", values, height=max(60, 22 * len(order)),
                 subtitle=_subtitle("", [f"{v}: not measured" for v in missing]),
                 mark={"type": "bar", "tooltip": True, "color": "#54a24b"},
                 encoding={"y": {"field": "variant", "type": "nominal", "sort": order,
                                 "title": None},
                           "x": {"field": "MiB", "type": "quantitative", "title": "MiB"}})
    return Figure("memory", "Peak memory per variant", spec)


def roofline_points(record: CompareRecord) -> list[dict[str, Any]]:
    """Each ok row with FLOPs and a rate, placed at its intensity over its traffic (the
    bytes its ops moved; over the I/O floor where the traffic is unknown, named so in
    ``bytes_are``); ``io_floor`` rides along for the tooltip."""
    points = []
    for r in record.results:
        moved = r.traffic_bytes if r.traffic_bytes else r.bytes_moved
        if r.status == "ok" and r.flops and moved and r.tflops_per_s:
            points.append({"variant": r.variant, "flops": r.flops, "bytes": moved,
                           "bytes_are": "traffic" if r.traffic_bytes else "I/O floor",
                           "io_floor": r.bytes_moved, "tflops": r.tflops_per_s})
    return points


def _roofline(record: CompareRecord) -> Figure | None:
    """The measured ceilings as lines, each labelled, each variant a point at its FLOPs over
    its traffic; the axes span the points and the ridge, a decade either side at most (not
    a fixed 0.01 to 10,000), with a tick and gridline per decade."""
    ceilings = record.ceilings
    if ceilings is None:
        return None
    peak, bandwidth = ceilings.matmul_tflops_per_s, ceilings.bandwidth_gbytes_per_s
    points = roofline_points(record)
    on_floor = sorted({p["variant"] for p in points if p["bytes_are"] == "I/O floor"})
    n = len(record.results)
    ridge = peak * 1000 / bandwidth  # FLOP per byte where the copy roof meets the matmul one
    x_lo, x_hi = _decades([p["flops"] / p["bytes"] for p in points] + [ridge])
    y_lo, y_hi = _decades([p["tflops"] for p in points] + [peak, bandwidth * x_lo / 1000])
    log_x = _log_axis("FLOP per byte", x_lo, x_hi)
    log_y = _log_axis("TFLOP/s", y_lo, y_hi)
    # Intensity and the roof are drawn by Vega from the recorded FLOPs, bytes and ceilings.
    roof: dict[str, Any] = {
        "data": {"sequence": {"start": math.log10(x_lo), "stop": math.log10(x_hi) + 0.001,
                              "step": (math.log10(x_hi) - math.log10(x_lo)) / 120,
                              "as": "e"}},
        "transform": [{"calculate": "pow(10, datum.e)", "as": "intensity"},
                      {"calculate": f"min({peak!r}, {bandwidth!r} * datum.intensity / 1000)",
                       "as": "roof"}],
        "mark": {"type": "line", "color": "#888", "strokeDash": [4, 3], "clip": True},
        "encoding": {"x": {"field": "intensity", **log_x},
                     "y": {"field": "roof", **log_y}}}
    # Each ceiling named on its line: the flat one above its right end; the slope below the
    # middle of its rise, level (an angle would depend on the drawn aspect), clear of it.
    foot = math.sqrt(x_lo * ridge)

    def label(x: float, y: float, text: str, **mark: Any) -> dict[str, Any]:
        return {"data": {"values": [{"intensity": x, "roof": y, "text": text}]},
                "mark": {"type": "text", "color": "#555", "fontSize": 11, **mark},
                "encoding": {"x": {"field": "intensity", **log_x},
                             "y": {"field": "roof", **log_y}, "text": {"field": "text"}}}

    labels = [label(x_hi, peak, f"matmul ceiling {peak:.3g} TFLOP/s", align="right", dy=-8),
              label(foot, bandwidth * foot / 1000, f"copy ceiling {bandwidth:.3g} GB/s",
                    align="left", dx=6, dy=10)]
    dots: dict[str, Any] = {
        "data": {"values": points},
        "transform": [{"calculate": "datum.flops / datum.bytes", "as": "intensity"}],
        "mark": {"type": "point", "filled": True, "size": 90, "tooltip": True},
        "encoding": {
            "x": {"field": "intensity", **log_x},
            "y": {"field": "tflops", **log_y},
            "color": {"field": "variant", "type": "nominal", "scale": color_scale(n)},
            "shape": {"field": "variant", "type": "nominal"}}}
    bytes_are = ("bytes: each variant's traffic (what its ops read and wrote, modelled from "
                 "their shapes), not the I/O floor"
                 + (f" (I/O floor for {', '.join(on_floor)}: traffic unknown)"
                    if on_floor else ""))
    spec = {
        "title": {"text": "roofline: achieved TFLOP/s against arithmetic intensity",
                  "anchor": "start",
                  "subtitle": [*_wrapped(f"ceilings measured in this run: matmul {peak:.3g} "
                                         f"TFLOP/s, copy {bandwidth:.3g} GB/s "
                                         f"({ceilings.method})"),
                               *_wrapped(f"FLOPs: {record.flops_convention}"),
                               *_wrapped(bytes_are)]},
        "width": 560, "height": 320,
        "layer": [roof, dots, *labels]}
    return Figure("roofline", "Roofline", spec)


def _decades(values: list[float]) -> tuple[float, float]:
    """The whole decades around the positive ``values``: 10^floor(log10 min) and
    10^ceil(log10 max), at least one decade apart."""
    logs = [math.log10(v) for v in values if v > 0 and math.isfinite(v)]
    lo, hi = math.floor(min(logs)), math.ceil(max(logs))
    return 10.0 ** lo, 10.0 ** max(hi, lo + 1)


def _log_axis(title: str, lo: float, hi: float) -> dict[str, Any]:
    """A log scale fixed to [lo, hi] with a tick (and gridline) per decade only."""
    ticks = [10.0 ** e for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
    return {"type": "quantitative", "title": title,
            "scale": {"type": "log", "domain": [lo, hi], "nice": False},
            "axis": {"values": ticks, "format": "~g"}}


def _wrapped(text: str, width: int = 110) -> list[str]:
    """A subtitle's text as lines Vega draws one under another (it never wraps a line)."""
    return textwrap.wrap(text, width) or [""]


def _subtitle(first: str, missing: list[str]) -> list[str]:
    lines = [first] if first else []
    if missing:
        shown = "; ".join(missing[:6]) + (f"; … {len(missing) - 6} more" if len(missing) > 6
                                          else "")
        lines.append(f"not drawn: {shown}")
    return lines
