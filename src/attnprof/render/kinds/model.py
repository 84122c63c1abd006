"""The views of a model run (kind ``model``): its summary, one row per implementation and
phase, and each run's per-layer attribution; the attention share and latency figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.model import ModelRecord
    from attnprof.record.model_attribution import ComponentTime
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Cell, Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: ModelRecord, console: Console, top: int) -> None:
    """The summary, the runs and each run's per-layer table (``top`` layers)."""
    from attnprof.render.cost_table import render_model_costs
    from attnprof.render.model_view import render_model

    render_model(record, console, top)
    render_model_costs(record, console)


def section(record: ModelRecord, anchor: str) -> Section:
    """The model and its input; one row per implementation and phase (their traces as
    links); a per-layer table for each run with an attribution, and its findings."""
    from attnprof.formatting import fmt_ms, format_bytes
    from attnprof.render.html.page import Section, Table, TraceLink, cell, num
    from attnprof.render.html.sections import environment_facts, status_cell

    m = record.model
    section = Section(kind="model", title=f"attnprof model — {m.source} ({m.architecture})",
                      anchor=anchor)
    section.facts += [("model", f"{m.source}: {m.architecture}, {m.family}, "
                       f"{m.parameters:,} parameters, {m.weights} weights"),
                      ("shape", f"batch {m.batch} · seq {m.seq} · {m.layers} layers · hidden "
                       f"{m.hidden} · heads {m.heads} (KV {m.kv_heads}) · {m.dtype}")]
    section.facts += environment_facts(record.environment)
    runs = Table(name=f"{anchor}-runs", caption="one row per implementation and phase",
                 columns=["implementation", "phase", "status", "median ms", "tokens/s",
                          "peak memory", "attention modules", "attention time", "SDPA backend",
                          "max diff", "notes / reason"])
    for r in record.runs:
        lat = r.latency_ms
        share = r.attention_share
        runs.rows.append([
            cell(r.implementation), cell(r.phase), status_cell(r.status),
            num(lat.median if lat else None, fmt_ms(lat.median) if lat else None),
            num(r.tokens_per_s, None if r.tokens_per_s is None else f"{r.tokens_per_s:,.0f}"),
            num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
            num(share, None if share is None else f"{share:.0%}"
                + (" ?" if r.shares_unreliable else "")),
            num(r.attention_time_share, None if r.attention_time_share is None
                else f"{r.attention_time_share:.0%}"),
            cell(r.sdpa_backend), num(r.max_abs_diff, None if r.max_abs_diff is None
                                      else f"{r.max_abs_diff:.1e}"),
            cell(r.reason if r.status != "ok" else "; ".join(
                [*([r.shares_unreliable] if r.shares_unreliable else []), *r.notes]))])
        runs.row_css.append(f"row-{r.status}")
        if r.trace:
            section.traces.append(TraceLink(label=f"{r.implementation} · {r.phase}",
                                            path=r.trace))
    section.tables.append(runs)
    for i, r in enumerate(record.runs):
        att = r.attribution
        if att is None:
            continue
        layers = Table(name=f"{anchor}-layers-{i}",
                       caption=f"{r.implementation} · {r.phase} — per layer "
                               f"(time basis: {att.time_basis})",
                       columns=["layer", "attention share", "top component",
                                *(c.name for c in att.parts), "core kernels", "actual"])
        for layer in att.layers:
            by_name = {c.name: c for c in layer.components}
            layers.rows.append([
                cell(layer.name),
                num(layer.attention_share, None if layer.attention_share is None
                    else f"{layer.attention_share:.0%}"),
                cell(layer.top_component),
                *(_component(by_name.get(c.name), att.time_basis) for c in att.parts),
                num(layer.core_kernels), cell(layer.actual)])
        section.tables.append(layers)
        section.findings += [(f"{r.implementation} · {r.phase}", f) for f in att.findings]
    return section


def _component(component: ComponentTime | None, basis: str) -> Cell:
    from attnprof.render.html.page import num

    if component is None:
        return num(None)
    us = component.on(basis)
    return num(us, None if us is None else f"{us:,.0f} µs")


def figures(record: ModelRecord) -> list[Figure]:
    """Each run's attention share, and every run's latency."""
    from attnprof.render.figures.model import model_figures

    return model_figures(record)


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The model's two figures."""
    return ["attention-share", "model-latency"]


VIEW = View(kind="model", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
