"""Terminal tables of a model attribution: the per-layer table, the model's parts, the
attention components over all layers, and the per-layer findings. Formats only.

Used by the model record's view and, for a model trace, by ``attnprof analyze``.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import format_bytes, format_us
from attnprof.record.attention_time import AttentionTime
from attnprof.record.finding import Finding
from attnprof.record.model_attribution import LayerReport, ModelAttribution
from attnprof.render.styles import SEVERITY_STYLE

__all__ = ["attention_time_text", "render_attribution", "render_model_findings", "share_text"]


#: What each time basis is, for captions.
_BASIS = {"device": "device time (kernels launched in each labelled region)",
          "work": "CPU time inside ATen ops (Python, dispatch and profiler time between ops "
                  "left out)",
          "cpu": "CPU wall time in each labelled region, Python included; in ops: inside "
                 "ATen ops; between ops: Python, dispatch and the profiler's own time"}


def share_text(value: float | None, unreliable: str | None) -> Text:
    """A share, marked ``?`` (and styled) when the attribution says it is unreliable."""
    if value is None:
        return Text("—")
    return Text(f"{value:.0%}?", style="yellow") if unreliable else Text(f"{value:.0%}")


def _step_caption(att: ModelAttribution) -> str:
    text = f"{att.steps} traced step(s)"
    shares = att.step_attention_shares
    if len(shares) > 1:
        text += (f"; figures of step {att.step + 1}, the median attention share (steps: "
                 + ", ".join(f"{s:.1%}" for s in shares) + ")")
    return text


def render_attribution(att: ModelAttribution, console: Console, *, title: str,
                       top: int = 48) -> None:
    """The per-layer table (at most ``top`` layers), then the parts and components lines."""
    basis = att.time_basis
    unit = "kernels" if att.kernel_source == "kernels" else "compute ops"
    wall = basis == "cpu"
    cross = any(k.name == "cross_attention" for k in att.kinds)
    table = Table(title=Text(title), title_justify="left",
                  caption=f"per step, {_BASIS.get(basis, basis)}; {_step_caption(att)}"
                  + ("; backward booked to the forward code it differentiates"
                     if att.backward_attributed else ""), caption_justify="left")
    table.add_column("layer", style="bold", overflow="fold")
    table.add_column("total", justify="right", no_wrap=True)
    table.add_column("attention", justify="right", no_wrap=True)
    if wall:
        table.add_column("in ops", justify="right", no_wrap=True)
        table.add_column("between ops", justify="right", no_wrap=True)
    table.add_column("share", justify="right")
    if cross:
        table.add_column("self", justify="right", no_wrap=True)
        table.add_column("cross", justify="right", no_wrap=True)
    table.add_column("top component", no_wrap=True)
    table.add_column(f"{unit} in core", justify="right")
    table.add_column("peak mem", justify="right", no_wrap=True)
    table.add_column("ran", overflow="fold")
    for layer in att.layers[:top]:
        cells: list[str | Text] = [Text(layer.name), format_us(layer.total_on(basis)),
                                   format_us(layer.attention_on(basis))]
        if wall:
            cells += [format_us(layer.attention_work_us),
                      format_us(layer.attention_between_us)]
        cells.append(share_text(layer.attention_share, att.unreliable))
        if cross:
            by_kind = {k.name: k for k in layer.kinds}
            cells += [format_us(by_kind[k].on(basis)) if k in by_kind else "—"
                      for k in ("self_attention", "cross_attention")]
        cells += [Text(_top(layer, basis)), f"{layer.core_kernels:g}",
                  format_bytes(layer.peak_memory_bytes), Text(_ran(layer))]
        table.add_row(*cells)
    console.print(table)
    if len(att.layers) > top:
        console.print(f"  [dim]{len(att.layers) - top} more layers in the record[/dim]")
    console.print(Text(f"  model (step {format_us(att.step_on(basis))}): " + ", ".join(
        f"{p.name} {format_us(p.on(basis))} ({p.share:.0%})" for p in att.parts)))
    kinds = ", ".join(f"{k.name.replace('_', '-')} {format_us(k.on(basis))} ({k.share:.0%})"
                      for k in att.kinds)
    console.print(Text("  attention modules " + ("—" if att.attention_share is None
                                                 else f"{att.attention_share:.0%}")
                       + " of the step, projections included" + (f" ({kinds})" if kinds else "")
                       + "; components, all layers: " + _components(att)))
    if att.attention_time is not None:
        console.print(Text("  " + attention_time_text(att.attention_time)))
    if att.unreliable:
        console.print(Text(f"  shares marked ? are unreliable: {att.unreliable}",
                           style="yellow"))


def attention_time_text(t: AttentionTime) -> str:
    """The attention time as every command states it: the core, forward + backward."""
    per = "step" if t.backward_us > 0 else "forward"
    text = (f"attention time (the core, as analyze, diff and the ranks view report it): "
            f"{format_us(t.per_step_us)} per {per}"
            + ("" if t.share is None else f", {t.share:.0%} of the {t.basis}"))
    if t.backward_us > 0:
        text += f" (forward {format_us(t.forward_us)}, backward {format_us(t.backward_us)})"
    if t.inferred_us > 0:
        text += f"; {format_us(t.inferred_us)} of it inferred from the pattern"
    return text


def _top(layer: LayerReport, basis: str) -> str:
    comp = next((c for c in layer.components if c.name == layer.top_component), None)
    if comp is None:
        return "—"
    return f"{comp.name} {format_us(comp.on(basis))}"


def _ran(layer: LayerReport) -> str:
    text = layer.actual or "—"
    if layer.as_requested is False:
        text += f" (asked {layer.requested})"
    if layer.core_source == "inferred":
        text += "; core inferred"
    return text


def _components(att: ModelAttribution) -> str:
    totals = att.attention_components()
    whole = sum(totals.values())
    parts = []
    for name, value in totals.items():
        parts.append(f"{name} {format_us(value)}"
                     + (f" ({value / whole:.0%})" if whole > 0 else ""))
    return ", ".join(parts) or "none labelled"


def render_model_findings(findings: list[Finding], console: Console) -> None:
    """Each finding once, with the layers it fires in."""
    if not findings:
        return
    for f in findings:
        head = Text(f"  [{f.severity}] ", style=SEVERITY_STYLE.get(f.severity, ""))
        head.append(f.title, style="bold")
        head.append(f"  ({f.rule})", style="dim")
        console.print(head)
        for line in f.evidence[-2:]:
            console.print(Text(f"      • {line}"))
        console.print(Text(f"      fix: {f.fix}", style="green"))

