"""A trace drawn: time per category in each region, and a timeline of one profiled step
(ops and device events, stacked by thread and stream)."""

from __future__ import annotations

from attnprof.record.check import CheckRecord
from attnprof.record.trace_report import TraceReport
from attnprof.render.figures.base import Figure, chart, color_scale, file_stem

__all__ = ["check_figure", "trace_figures"]

#: Lanes of device work first-class colours; CPU ops by depth.
_KINDS = ["op", "compute", "memcpy", "memset", "communication"]
_KIND_COLORS = ["#9ecae9", "#4c78a8", "#e45756", "#f58518", "#72b7b2"]


def trace_figures(report: TraceReport, *, prefix: str) -> list[Figure]:
    """Time per category for ``report``, and its step timeline when it has one."""
    figures = [_categories(report, prefix)]
    if report.timeline is not None:
        figures.append(_timeline(report, prefix))
    return figures


def _categories(report: TraceReport, prefix: str) -> Figure:
    values = [{"region": region.name, "category": category, "us": us}
              for region in report.regions for category, us in region.categories_us.items()
              if us]
    if not values:  # a CPU-only trace: the regions' CPU time is all there is
        values = [{"region": region.name, "category": "cpu", "us": region.cpu_us_per_forward}
                  for region in report.regions]
    regions = [r.name for r in report.regions]
    spec = chart(
        "time per forward by category (µs)", values, height=max(60, 24 * len(regions)),
        subtitle=[f"{report.source} · {report.device}"],
        mark={"type": "bar", "tooltip": True},
        encoding={"y": {"field": "region", "type": "nominal", "sort": regions, "title": None},
                  "x": {"field": "us", "type": "quantitative", "title": "µs per forward",
                        "stack": True},
                  "color": {"field": "category", "type": "nominal",
                            "scale": color_scale(len({v["category"] for v in values}))}})
    return Figure(f"{file_stem(prefix)}-categories", f"Time per category: {report.source}",
                  spec)


def _timeline(report: TraceReport, prefix: str) -> Figure:
    timeline = report.timeline
    assert timeline is not None
    values = [{"lane": e.lane, "name": e.name, "kind": e.kind, "start": e.start_us,
               "end": e.start_us + e.dur_us, "dur_us": e.dur_us, "depth": e.depth}
              for e in timeline.events]
    lanes = list(dict.fromkeys(e.lane for e in timeline.events))
    cut = (f"; the {len(values)} longest of {timeline.total} events"
           if timeline.total > len(values) else "")
    spec = chart(
        f"one step: {timeline.region} #{timeline.instance + 1} of {timeline.instances} "
        f"(the median length), {timeline.dur_us:,.0f} µs", values,
        height=max(80, 20 * (timeline.max_depth + 1) * len(lanes)), width=760,
        subtitle=[f"ops to depth {timeline.max_depth} on each CPU thread, device events on "
                  f"their streams{cut}"],
        mark={"type": "bar", "tooltip": {"content": "data"}, "stroke": "white",
              "strokeWidth": 0.3},
        encoding={"y": {"field": "lane", "type": "nominal", "sort": lanes, "title": None},
                  "yOffset": {"field": "depth", "type": "ordinal"},
                  "x": {"field": "start", "type": "quantitative", "title": "µs from the step's "
                        "start"},
                  "x2": {"field": "end"},
                  # The name as each bar's accessible text (and its tooltip), drawn as text.
                  "description": {"field": "name"},
                  "color": {"field": "kind", "type": "nominal",
                            "scale": {"domain": _KINDS, "range": _KIND_COLORS}}})
    return Figure(f"{file_stem(prefix)}-timeline", f"Timeline of one step: {report.source}",
                  spec)


def check_figure(record: CheckRecord) -> Figure:
    """Without a report: the expectations, held or not."""
    values = [{"expectation": r.what, "verdict": "holds" if r.ok else "mismatch",
               "observed": r.observed, "expected": r.expected} for r in record.rows]
    spec = chart("expectations", values, height=max(60, 22 * len(values)),
                 mark={"type": "bar", "tooltip": True},
                 encoding={"y": {"field": "expectation", "type": "nominal", "title": None},
                           "x": {"aggregate": "count", "title": "expectations"},
                           "color": {"field": "verdict", "type": "nominal",
                                     "scale": {"domain": ["holds", "mismatch"],
                                               "range": ["#54a24b", "#e45756"]}}})
    return Figure("check", "Expectations", spec)
