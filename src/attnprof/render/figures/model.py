"""A model drawn: attention's share of each layer's time, per implementation and phase,
and each run's latency."""

from __future__ import annotations

from typing import Any

from attnprof.record.model import ModelRecord
from attnprof.render.figures.base import Figure, chart, color_scale

__all__ = ["model_figures"]


def model_figures(record: ModelRecord) -> list[Figure]:
    """Attention share per layer, and latency per run."""
    return [_share(record), _latency(record)]


def _share(record: ModelRecord) -> Figure:
    values: list[dict[str, Any]] = []
    for run in record.runs:
        att = run.attribution
        for layer in att.layers if att is not None else []:
            if layer.attention_share is None:
                continue
            values.append({"run": f"{run.implementation} · {run.phase}", "layer": layer.name,
                           "index": layer.index, "share": layer.attention_share,
                           "top component": layer.top_component or ""})
    runs = list(dict.fromkeys(v["run"] for v in values))
    layers = list(dict.fromkeys(v["layer"] for v in sorted(values, key=lambda v: v["index"])))
    spec = chart("attention's share of each layer's time", values,
                 subtitle=[f"{record.model.source} · {record.model.architecture}"],
                 width=max(300, min(900, 28 * len(layers) * max(1, len(runs)))),
                 mark={"type": "bar", "tooltip": True},
                 encoding={"x": {"field": "layer", "type": "nominal", "sort": layers,
                                 "title": None},
                           "xOffset": {"field": "run", "type": "nominal"},
                           "y": {"field": "share", "type": "quantitative",
                                 "axis": {"format": "%"}, "scale": {"domain": [0, 1]},
                                 "title": "attention share"},
                           "color": {"field": "run", "type": "nominal",
                                     "scale": color_scale(len(runs))}})
    return Figure("attention-share", "Attention share per layer", spec)


def _latency(record: ModelRecord) -> Figure:
    values = [{"run": f"{r.implementation} · {r.phase}", "median": r.latency_ms.median,
               "q1": r.latency_ms.q1, "q3": r.latency_ms.q3}
              for r in record.runs if r.latency_ms is not None]
    order = [v["run"] for v in values]
    y = {"field": "run", "type": "nominal", "sort": order, "title": None}
    spec = chart("median latency per step (ms), whiskers: IQR", values,
                 height=max(60, 22 * len(order)),
                 layer=[{"mark": {"type": "bar", "tooltip": True},
                         "encoding": {"y": y, "x": {"field": "median",
                                                    "type": "quantitative", "title": "ms"}}},
                        {"mark": {"type": "rule"},
                         "encoding": {"y": y, "x": {"field": "q1", "type": "quantitative"},
                                      "x2": {"field": "q3"}}}])
    return Figure("model-latency", "Latency per implementation and phase", spec)
