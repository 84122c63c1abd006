"""Terminal rendering of a :class:`~attnprof.record.trace_report.TraceReport` with rich.

Formats only: every number shown is a field of the report. Long lists are cut to the
``top`` rows a reader can take in (kernels in run order when they fit, else the largest by
time, which the caption says), and each cut says how many rows it left out.
"""

from __future__ import annotations

from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

# Every string from a trace goes in a Text: names like "[param|cuda]" must not be read as
# rich markup.
from rich.text import Text

from attnprof.formatting import counted, format_bytes, format_us
from attnprof.record.trace_report import (
    PATH_SEP,
    Finding,
    KernelStat,
    RegionReport,
    TraceContention,
    TraceReport,
)
from attnprof.render.model_attribution import render_attribution, render_model_findings
from attnprof.render.styles import SEVERITY_STYLE

__all__ = ["REST_FIELDS", "attention_lines", "fmt_size", "fmt_us", "head_of", "render_findings",
           "render_trace_head", "render_trace_report", "render_trace_rest"]

_VERDICT_STYLE = {"cpu-bound": "yellow", "device-bound": "green", "cpu-only": "cyan",
                  "unknown": "dim"}


#: Sizes and times as the findings' evidence writes them (one shared definition).
fmt_us = format_us
fmt_size = format_bytes


def _count(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def render_trace_report(report: TraceReport, console: Console, top: int = 15) -> None:
    """Print a report: header, each region's tables, top kernels, then the findings."""
    render_trace_head(report, console, top)
    render_trace_rest(report, console, top)


def render_trace_head(report: TraceReport, console: Console, top: int = 15) -> None:
    """The first part of :func:`render_trace_report`: the header and each region's tables.
    It reads only what :func:`head_of` holds, which the analysis has final before its
    findings (:func:`~attnprof.analysis.analyze.analyze_trace`'s ``on_head``)."""
    console.print(_header(report))
    contention = report.contention if report.contention and report.contention.marked else None
    for region in report.regions:
        _render_region(region, console, top,
                       contention if contention and contention.region == region.name else None)


#: The fields of a report that only :func:`render_trace_rest` shows: the ones the analysis
#: adds after its ``on_head`` call.
REST_FIELDS = ("findings", "model", "timeline")


def head_of(report: TraceReport) -> bytes:
    """Everything of ``report`` but :data:`REST_FIELDS`, encoded: two reports with the same
    head bytes draw the same :func:`render_trace_head` (a NaN equals itself as bytes, as
    the text drawn from it does), and the bytes taken once do not change with the report."""
    blank: dict[str, Any] = dict.fromkeys(REST_FIELDS)
    blank["findings"] = []
    return msgspec.msgpack.encode(msgspec.structs.replace(report, **blank))


def render_trace_rest(report: TraceReport, console: Console, top: int = 15) -> None:
    """The rest of :func:`render_trace_report`: top kernels, the model's layers, the
    findings."""
    _render_breakdown(report, console, top)
    if report.model is not None:  # a model trace: where each layer's time went
        console.print()
        render_attribution(report.model, console, title=f"{report.model.region} — per layer",
                           top=max(top, 1) * 4)
        render_model_findings(report.model.findings, console)
    render_findings(report.findings, console)


def _header(report: TraceReport) -> Text:
    text = Text(f"trace {report.source}", style="bold")
    where = report.device + (f" ({', '.join(report.device_names)})" if report.device_names else "")
    parts = [where, f"{report.events} events"]
    if report.rank is not None:
        parts.append(f"rank {report.rank}"
                     + (f" of {report.world_size}" if report.world_size is not None else ""))
    meta = report.attnprof or {}
    if meta.get("variant"):
        parts.append(f"variant {meta['variant']}")
    text.append("\n" + " · ".join(parts), style="dim")
    if isinstance(meta.get("capture"), dict):
        _capture_lines(meta["capture"], text)
    # What the analysis could not use, each with its reasons (never left out silently).
    for counts, noun, plural, what in (
            (report.skipped_events, "event", None, "skipped (no usable time)"),
            (report.dropped_entries, "entry", "entries", "of the event list not read"),
            (report.unusable_values, "value", None, "unusable, left out")):
        if counts:
            reasons = ", ".join(f"{n} {why}" for why, n in counts.items())
            text.append(f"\n{counted(sum(counts.values()), noun, plural)} {what}: {reasons}",
                        style="yellow")
    if report.contention is not None and report.contention.marked:
        text.append(f"\n{_MARK} contended capture: {report.contention.reason}; the figures "
                    f"marked {_MARK} are those of a contended moment (see the contended-trace "
                    "finding for how to retake it)", style="yellow")
    return text


def _capture_lines(capture: dict[str, object], text: Text) -> None:
    """What ``attnprof.capture`` (or ``trace_handler``) recorded of itself: the schedule's
    steps, the labels' cost, and why a capture is partial."""
    label = capture.get("label")
    said = "captured by attnprof" + (f" ({label!r})" if label else "")
    recorded, active = capture.get("steps_recorded"), capture.get("active")
    if isinstance(recorded, int) and isinstance(active, int):
        said += f": {recorded} of {active} scheduled steps recorded"
    per_step, per_label = capture.get("labels_per_step"), capture.get("label_cost_us")
    cost, share = capture.get("labels_cost_us_per_step"), capture.get("labels_cost_share")
    if (isinstance(per_step, (int, float)) and isinstance(per_label, (int, float))
            and isinstance(cost, (int, float))):
        said += (f" · attnprof's labels cost {fmt_us(float(cost))} per step "
                 f"({_count(float(per_step))} labels × {fmt_us(float(per_label))}"
                 + (f", {share:.1%} of the step" if isinstance(share, float) else "") + ")")
    text.append("\n" + said, style="dim")
    if capture.get("status") == "partial":
        text.append(f"\npartial capture: {capture.get('reason') or 'ended early'}",
                    style="yellow")
    notes = capture.get("notes")
    for note in notes if isinstance(notes, list) else []:
        text.append(f"\n{note}", style="yellow")


#: Marks the figures of a contended capture.
_MARK = "‡"


def _render_region(region: RegionReport, console: Console, top: int,
                   contention: TraceContention | None = None) -> None:
    unit = "kernels" if region.kernel_source == "kernels" else "compute ops"
    noun = unit[:-1]
    each = region.unit
    title = Text(f"\n{region.name}", style="bold")
    title.append(f" — {counted(region.instances, each)}, "
                 f"{counted(round(region.kernels_per_forward, 2), noun)} per {each}, ")
    title.append(region.verdict, style=_VERDICT_STYLE.get(region.verdict, ""))
    if contention is not None:
        title.append(f"  {_MARK} contended", style="yellow")
    console.print(title)
    stalled = {name for name, _, _ in contention.stalled_ops} if contention else set()
    _kernel_table(region, console, top, unit, stalled)
    _time_table(region, console, contention is not None)
    _phase_table(region, console, contention is not None)
    _op_table(region, console, top)
    extras = attention_lines(region)
    if region.sdpa_backend:
        extras.append(f"SDPA backend: {region.sdpa_backend}")
    if region.peak_memory_bytes is not None:
        extras.append(f"peak memory per forward ({region.memory_device}): "
                      f"{fmt_size(region.peak_memory_bytes)}")
    if region.largest_allocation_bytes is not None:
        extras.append(f"largest allocation {fmt_size(region.largest_allocation_bytes)}"
                      f" by {region.largest_allocation_op or '?'}")
    if region.launch_apis:
        extras.append("launch APIs: "
                      + ", ".join(f"{k} ×{v}" for k, v in region.launch_apis.items()))
    for line in extras:
        console.print(Text(f"  {line}"))


def attention_lines(region: RegionReport, top: int = 6) -> list[str]:
    """The region's attention time: per step (per forward when it has no backward), its
    share, the forward/backward split, how it was found, and the ops it counted."""
    att = region.attention
    if not region.attention_share:
        return []
    if att is None:  # a report written before the attention time had its split
        return [f"attention: {fmt_us(region.attention_us_per_forward)} per forward, "
                f"{region.attention_share:.0%} of the work"]
    per = "step" if region.phases or att.backward_us > 0 else "forward"
    line = (f"attention: {fmt_us(att.per_step_us)} per {per}, {region.attention_share:.0%} "
            f"of the {att.basis}")
    if att.backward_us > 0:
        line += f" (forward {fmt_us(att.forward_us)}, backward {fmt_us(att.backward_us)})"
    how = {"name": "SDPA, flex and fused attention ops and their backward, by name",
           "pattern": "hand-written attention, inferred from its matmul → softmax → matmul "
                      "pattern"}
    found = "; ".join(how.get(h, h) for h in att.found_by)  # a hand-edited record: as it says
    if 0 < att.inferred_us < att.per_step_us:
        found += f" ({fmt_us(att.inferred_us)} of it inferred)"
    lines = [f"{line} — {found}"]
    for label, ops in (("forward", att.forward_ops), ("backward", att.backward_ops)):
        if ops:
            shown = ", ".join(f"{name} ×{_count(n)}" for name, n in list(ops.items())[:top])
            more = f", {len(ops) - top} more" if len(ops) > top else ""
            lines.append(f"  counted per {per}, {label}: {shown}{more}")
    return lines


def _kernel_table(region: RegionReport, console: Console, top: int, unit: str,
                  stalled: set[str] | frozenset[str] = frozenset()) -> None:
    if not region.kernels:
        console.print(f"  [dim]no {unit} in this region[/dim]")
        return
    rows = region.kernels
    caption = "in the order they first ran"
    if len(rows) > top:
        rows = sorted(rows, key=lambda k: -k.total_us)[:top]
        caption = f"top {top} of {len(region.kernels)} by time"
    on_device = region.kernel_source == "kernels"
    table = Table(title=f"{unit} per {region.unit} ({caption})", title_justify="left")
    table.add_column("kernel" if on_device else "op", overflow="fold", ratio=2)
    table.add_column("per step" if region.phases else "per fwd", justify="right")
    table.add_column("mean", justify="right", no_wrap=True)
    table.add_column("share", justify="right")
    table.add_column("launched by", overflow="fold", ratio=1)
    if on_device:
        table.add_column("launch", overflow="fold", ratio=1)
    for k in rows:
        label = _kernel_label(k) if on_device else Text(k.name)
        if k.name in stalled:  # it ran far slower than its peers: a contended figure
            label.append(f" {_MARK}", style="yellow")
        cells: list[str | Text] = [label,
                                   _count(k.per_forward), fmt_us(k.mean_us), f"{k.share:.0%}",
                                   Text(_short_path(k.call_path or k.launched_by or "—"))]
        if on_device:
            cells.append(_launch_text(k))
        table.add_row(*cells)
    console.print(table)


def _short_path(path: str, keep: int = 4) -> str:
    """The outermost op and the innermost ones: where the call entered and what launched."""
    parts = path.split(PATH_SEP)
    if len(parts) <= keep:
        return path
    return PATH_SEP.join([parts[0], "…", *parts[-(keep - 2):]])


def _kernel_label(k: KernelStat) -> Text:
    text = Text(k.short)
    if k.short != k.name:
        text.append(f"\n{k.name if len(k.name) <= 60 else k.name[:59] + '…'}", style="dim")
    return text


def _launch_text(k: KernelStat) -> Text:
    parts = []
    if k.launch_api:
        parts.append(k.launch_api)
    if k.grid is not None and k.block is not None:
        parts.append(f"grid {'x'.join(map(str, k.grid))} block {'x'.join(map(str, k.block))}")
    if k.registers_per_thread is not None:
        parts.append(f"{k.registers_per_thread} regs")
    if k.shared_memory is not None:
        parts.append(f"{fmt_size(k.shared_memory)} smem")
    if k.occupancy is not None or k.theoretical_occupancy is not None:
        parts.append(f"occupancy {k.occupancy_text()} (CUPTI)")
    if (theoretical := k.theoretical_text()) is not None:
        parts.append(f"theoretical {theoretical}")
    text = Text(", ".join(parts) or "—")
    if k.note:
        text.append(f"\n{k.note}", style="yellow")
    return text


def _time_table(region: RegionReport, console: Console, marked: bool = False) -> None:
    title = f"time per {region.unit}" + (f" {_MARK}" if marked else "")
    table = Table(title=title, title_justify="left", show_header=True)
    table.add_column("CPU dispatch", justify="right")
    table.add_column("device busy", justify="right")
    for name in region.categories_us:
        table.add_column(Text(name), justify="right")
    table.add_column("verdict")
    table.add_row(fmt_us(region.cpu_us_per_forward), fmt_us(region.device_us_per_forward),
                  *(fmt_us(v) for v in region.categories_us.values()),
                  Text(region.verdict, style=_VERDICT_STYLE.get(region.verdict, "")))
    console.print(table)
    if region.gaps:
        console.print(Text("  largest idle gaps: " + "; ".join(
            f"{fmt_us(g.dur_us)} after {g.after or 'the step start'}" for g in region.gaps)))


def _phase_table(region: RegionReport, console: Console, marked: bool = False) -> None:
    """A training step's phases: wall time, its share, and attention's part of each."""
    if not region.phases:
        return
    work = "device" if region.kernel_source == "kernels" else "compute"
    table = Table(title="phases of a step" + (f" {_MARK}" if marked else ""),
                  title_justify="left")
    for name in ("phase", "time / step", "share", f"{work} / step", "attention / step",
                 "attention share"):
        table.add_column(name, justify="left" if name == "phase" else "right")
    for p in region.phases:
        table.add_row(p.name, fmt_us(p.us), f"{p.share:.0%}", fmt_us(p.work_us),
                      fmt_us(p.attention_us),
                      "—" if p.attention_share is None else f"{p.attention_share:.1%}")
    table.add_row("step", fmt_us(sum(p.us for p in region.phases)), "100%",
                  fmt_us(sum(p.work_us for p in region.phases)),
                  fmt_us(region.attention_us_per_forward),
                  "—" if region.attention_share is None else f"{region.attention_share:.1%}",
                  style="bold")
    console.print(table)


def _op_table(region: RegionReport, console: Console, top: int) -> None:
    if not region.ops:
        return
    table = Table(title=f"top ops by self time ({min(top, len(region.ops))} of "
                        f"{len(region.ops)})", title_justify="left")
    table.add_column("op", overflow="fold", ratio=2)
    each = "step" if region.phases else "fwd"
    table.add_column(f"per {each}", justify="right")
    table.add_column(f"self / {each}", justify="right")
    table.add_column(f"total / {each}", justify="right")
    n = region.instances or 1
    for o in region.ops[:top]:
        table.add_row(Text(o.name), _count(o.per_forward), fmt_us(o.self_us / n),
                      fmt_us(o.total_us / n))
    console.print(table)


def _render_breakdown(report: TraceReport, console: Console, top: int) -> None:
    b = report.breakdown
    if b.count == 0:
        return
    table = Table(title=f"\ntop device kernels, whole trace ({b.count} events, "
                        f"{fmt_us(b.total_us)} summed)", title_justify="left")
    table.add_column("kernel", overflow="fold", ratio=2)
    table.add_column("category")
    table.add_column("count", justify="right")
    table.add_column("total", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("share", justify="right")
    for k in b.kernels[:top]:
        table.add_row(Text(k.short), Text(k.category), str(k.count), fmt_us(k.total_us),
                      fmt_us(k.mean_us),
                      f"{k.share:.1%}")
    console.print(table)
    console.print(Text("  by category: " + ", ".join(
        f"{c.category} {fmt_us(c.total_us)} ({c.share:.0%})" for c in b.categories if c.count)))
    if report.unassigned_device_events:
        console.print(f"  [dim]{report.unassigned_device_events} device events "
                      f"({fmt_us(report.unassigned_device_us)}) were launched outside every "
                      "region or before the trace started[/dim]")


def render_findings(findings: list[Finding], console: Console) -> None:
    """The findings, one block each: severity, title, rule, evidence and the fix."""
    if not findings:
        console.print("\n[green]no findings[/green]")
        return
    console.print(f"\n[bold]findings ({len(findings)})[/bold]")
    for f in findings:
        head = Text(f"[{f.severity}] ", style=SEVERITY_STYLE.get(f.severity, ""))
        head.append(f.title, style="bold")
        head.append(f"  ({f.rule}{', ' + f.region if f.region else ''})", style="dim")
        console.print(head)
        for line in f.evidence:
            console.print(Text(f"    • {line}"))
        console.print(Text(f"    fix: {f.fix}", style="green"))
