"""A comparison drawn: latency per variant (median and IQR), peak memory per variant, and
the roofline — achieved FLOP/s against arithmetic intensity under the matmul and copy
ceilings measured in the same run."""

from __future__ import annotations

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
    """The measured ceilings as lines, each variant a point at its FLOPs over its traffic."""
    ceilings = record.ceilings
    if ceilings is None:
        return None
    peak, bandwidth = ceilings.matmul_tflops_per_s, ceilings.bandwidth_gbytes_per_s
    points = roofline_points(record)
    on_floor = sorted({p["variant"] for p in points if p["bytes_are"] == "I/O floor"})
    n = len(record.results)
    log_x = {"type": "quantitative", "scale": {"type": "log"}, "title": "FLOP per byte"}
    log_y = {"type": "quantitative", "scale": {"type": "log"}, "title": "TFLOP/s"}
    # Intensity and the roof are drawn by Vega from the recorded FLOPs, bytes and ceilings.
    roof: dict[str, Any] = {
        "data": {"sequence": {"start": -2, "stop": 4.01, "step": 0.05, "as": "e"}},
        "transform": [{"calculate": "pow(10, datum.e)", "as": "intensity"},
                      {"calculate": f"min({peak!r}, {bandwidth!r} * datum.intensity / 1000)",
                       "as": "roof"}],
        "mark": {"type": "line", "color": "#888", "strokeDash": [4, 3]},
        "encoding": {"x": {"field": "intensity", **log_x},
                     "y": {"field": "roof", **log_y}}}
    dots: dict[str, Any] = {
        "data": {"values": points},
        "transform": [{"calculate": "datum.flops / datum.bytes", "as": "intensity"}],
        "mark": {"type": "point", "filled": True, "size": 90, "tooltip": True},
        "encoding": {
            "x": {"field": "intensity", **log_x},
            "y": {"field": "tflops", **log_y},
            "color": {"field": "variant", "type": "nominal", "scale": color_scale(n)},
            "shape": {"field": "variant", "type": "nominal"}}}
    spec = {
        "title": {"text": "roofline: achieved TFLOP/s against arithmetic intensity",
                  "anchor": "start",
                  "subtitle": [f"ceilings measured in this run: matmul {peak:.3g} TFLOP/s, "
                               f"copy {bandwidth:.3g} GB/s ({ceilings.method})",
                               f"FLOPs: {record.flops_convention}; bytes: each variant's "
                               "traffic (what its ops read and wrote, modelled from their "
                               "shapes), not the I/O floor"
                               + (f" (I/O floor for {', '.join(on_floor)}: traffic unknown)"
                                  if on_floor else "")]},
        "width": 560, "height": 320,
        "layer": [roof, dots]}
    return Figure("roofline", "Roofline", spec)


def _subtitle(first: str, missing: list[str]) -> list[str]:
    lines = [first] if first else []
    if missing:
        shown = "; ".join(missing[:6]) + (f"; … {len(missing) - 6} more" if len(missing) > 6
                                          else "")
        lines.append(f"not drawn: {shown}")
    return lines
