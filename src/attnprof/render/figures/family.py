"""Figures of the kinds that compare runs: a rank set (attention share and time per
category per rank, collective time per step and rank) and a diff (old against new)."""

from __future__ import annotations

from typing import Any

from attnprof.record.diff import DiffRecord
from attnprof.record.ranks import RanksRecord
from attnprof.render.figures.base import Figure, chart, color_scale

__all__ = ["diff_figures", "ranks_figures"]


def ranks_figures(record: RanksRecord) -> list[Figure]:
    """Time per category per rank, and each step's collective time per rank."""
    values = [{"rank": str(r.rank), "category": c, "us": us}
              for r in record.ranks for c, us in r.categories_us.items() if us]
    order = [str(r.rank) for r in record.ranks]
    categories = chart("time per step by category (µs), per rank", values,
                       height=max(60, 22 * len(order)),
                       mark={"type": "bar", "tooltip": True},
                       encoding={"y": {"field": "rank", "type": "nominal", "sort": order},
                                 "x": {"field": "us", "type": "quantitative", "stack": True,
                                       "title": "µs per step"},
                                 "color": {"field": "category", "type": "nominal"}})
    steps = [{"step": s.step, "rank": str(rank), "us": us}
             for s in record.steps for rank, us in zip(s.ranks, s.collective_us, strict=False)]
    collectives = chart("collective time per step and rank (µs): the straggler waits least",
                        steps, mark={"type": "line", "point": True, "tooltip": True},
                        encoding={"x": {"field": "step", "type": "ordinal"},
                                  "y": {"field": "us", "type": "quantitative",
                                        "title": "µs in collectives"},
                                  "color": {"field": "rank", "type": "nominal",
                                            "scale": color_scale(len(order))}})
    return [Figure("ranks-categories", "Time per category per rank", categories),
            Figure("ranks-collectives", "Collective time per step", collectives)]


def diff_figures(record: DiffRecord) -> list[Figure]:
    """Each metric of each row, old beside new, a significant change marked."""
    values: list[dict[str, Any]] = []
    for r in record.rows:
        key = " · ".join(f"{k}={v}" for k, v in r.key.items())
        for m in r.metrics:
            verdict = ("worse" if m.worse else "better") if m.significant else (
                "not judged" if m.not_judged else "~")
            for side, value in (("old", m.old), ("new", m.new)):
                if value is not None:
                    values.append({"row": key, "metric": m.metric, "side": side,
                                   "value": value, "verdict": verdict})
    spec = chart(f"{record.old.ref} → {record.new.ref}: each metric, old and new", values,
                 width=260, height=max(60, 14 * len({v["row"] for v in values})),
                 mark={"type": "bar", "tooltip": True},
                 encoding={"y": {"field": "row", "type": "nominal", "title": None},
                           "yOffset": {"field": "side"},
                           "x": {"field": "value", "type": "quantitative", "title": None},
                           "color": {"field": "side", "type": "nominal",
                                     "scale": {"domain": ["old", "new"],
                                               "range": ["#bab0ac", "#4c78a8"]}},
                           "column": {"field": "metric", "type": "nominal", "title": None}},
                 resolve={"scale": {"x": "independent"}})
    return [Figure("diff", "Old against new", spec)]
