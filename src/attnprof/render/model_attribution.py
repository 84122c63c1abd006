"""Terminal tables of a model attribution: the per-layer table, the model's parts, the
attention components over all layers, and the per-layer findings. Formats only.

Used by the model record's view and, for a model trace, by ``attnprof analyze``.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import format_bytes, format_us
from attnprof.record.finding import Finding
from attnprof.record.model_attribution import LayerReport, ModelAttribution
from attnprof.render.styles import SEVERITY_STYLE

__all__ = ["render_attribution", "render_model_findings"]



#: What each time basis is, for captions.
_BASIS = {"device": "device time (kernels)",
          "work": "CPU time inside ATen ops (Python, dispatch and profiler time between ops "
                  "left out)",
          "cpu": "CPU wall time"}


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def render_attribution(att: ModelAttribution, console: Console, *, title: str,
                       top: int = 48) -> None:
    """The per-layer table (at most ``top`` layers), then the parts and components lines."""
    basis = att.time_basis
    unit = "kernels" if att.kernel_source == "kernels" else "compute ops"
    table = Table(title=Text(title), title_justify="left",
                  caption=f"per step, {_BASIS.get(basis, basis)}; {att.steps} traced step(s)"
                  + ("; backward booked to the forward code it differentiates"
                     if att.backward_attributed else ""), caption_justify="left")
    table.add_column("layer", style="bold", overflow="fold")
    table.add_column("total", justify="right", no_wrap=True)
    table.add_column("attention", justify="right", no_wrap=True)
    table.add_column("share", justify="right")
    table.add_column("top component", no_wrap=True)
    table.add_column(f"{unit} in core", justify="right")
    table.add_column("peak mem", justify="right", no_wrap=True)
    table.add_column("ran", overflow="fold")
    layers = att.layers[:top]
    for layer in layers:
        table.add_row(Text(layer.name), format_us(layer.total_on(basis)),
                      format_us(layer.attention_on(basis)),
                      _share(layer.attention_share), Text(_top(layer, basis)),
                      f"{layer.core_kernels:g}", format_bytes(layer.peak_memory_bytes),
                      Text(_ran(layer)))
    console.print(table)
    if len(att.layers) > top:
        console.print(f"  [dim]{len(att.layers) - top} more layers in the record[/dim]")
    console.print(Text("  model: " + ", ".join(
        f"{p.name} {format_us(p.on(basis))} ({p.share:.0%})" for p in att.parts)))
    console.print(Text("  attention components, all layers: " + _components(att)))


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

