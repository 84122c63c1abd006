"""A trace report as a section of the HTML page: its regions (time, verdict, attention
share), the phases of a training step, kernels per forward with their decoded names, the
op table, the breakdown and the findings with evidence and fix."""

from __future__ import annotations

from attnprof.formatting import format_bytes, format_us
from attnprof.record.trace_report import RegionReport, TraceReport
from attnprof.render.html.page import Section, Table, TraceLink, cell, num

__all__ = ["trace_section"]


def trace_section(report: TraceReport, *, title: str, anchor: str,
                  trace_path: str | None = None) -> Section:
    """The section of one trace report."""
    section = Section(kind="trace", title=title, anchor=anchor)
    section.facts = [("trace", report.source), ("device", report.device),
                     ("device names", ", ".join(report.device_names) or "—"),
                     ("events", f"{report.events:,}")]
    if report.rank is not None:
        section.facts.append(("rank", f"{report.rank} of {report.world_size}"))
    capture = (report.attnprof or {}).get("capture")
    if isinstance(capture, dict):
        section.facts += _capture_facts(capture)
    if report.unassigned_device_events:
        section.facts.append(("device events in no region",
                              f"{report.unassigned_device_events} "
                              f"({format_us(report.unassigned_device_us)})"))
    for what, counts in (("skipped events", report.skipped_events),
                         ("dropped entries", report.dropped_entries),
                         ("unusable values", report.unusable_values),
                         ("unmodelled categories", report.unmodelled_categories)):
        if counts:
            section.facts.append((what, ", ".join(f"{k}: {v}" for k, v in counts.items())))
    if report.contention is not None and report.contention.marked:
        section.facts.append(("contended capture ‡", f"{report.contention.reason} (region "
                              f"{report.contention.region}: its figures are those of a "
                              "contended moment)"))
    section.tables.append(_regions(report, anchor))
    for region in report.regions:
        if region.phases:
            section.tables.append(_phases(region, anchor))
        section.tables.append(_kernels(region, anchor))
        if region.ops:
            section.tables.append(_ops(region, anchor))
    if not report.breakdown.is_empty:
        section.tables.append(_breakdown(report, anchor))
    section.findings = [(report.source, f) for f in report.findings]
    path = trace_path or report.source
    section.traces.append(TraceLink(label=title, path=path))
    return section


def _capture_facts(capture: dict[str, object]) -> list[tuple[str, str]]:
    """What ``attnprof.capture`` recorded of itself: steps, the labels' cost, why partial."""
    facts = []
    recorded, active = capture.get("steps_recorded"), capture.get("active")
    label = capture.get("label")
    if isinstance(recorded, int) and isinstance(active, int):
        facts.append(("captured by attnprof" + (f" ({label!r})" if label else ""),
                      f"{recorded} of {active} scheduled steps recorded"))
    per_step, per_label = capture.get("labels_per_step"), capture.get("label_cost_us")
    cost, share = capture.get("labels_cost_us_per_step"), capture.get("labels_cost_share")
    if (isinstance(per_step, (int, float)) and isinstance(per_label, (int, float))
            and isinstance(cost, (int, float))):
        facts.append(("attnprof's labels cost", f"{format_us(float(cost))} per step "
                      f"({per_step:g} labels × {format_us(float(per_label))}"
                      + (f", {share:.1%} of the step" if isinstance(share, float) else "")
                      + ")"))
    if capture.get("status") == "partial":
        facts.append(("partial capture", str(capture.get("reason") or "ended early")))
    return facts


def _regions(report: TraceReport, anchor: str) -> Table:
    table = Table(name=f"{anchor}-regions",
                  caption="regions: time per forward (per step, for training steps)",
                  columns=["region", "forwards or steps", "kernels per forward",
                           "CPU per forward",
                           "device per forward", "verdict", "attention share", "peak memory",
                           "SDPA backend"])
    for r in report.regions:
        table.rows.append([
            cell(r.name), num(r.instances), num(r.kernels_per_forward),
            num(r.cpu_us_per_forward, format_us(r.cpu_us_per_forward)),
            num(r.device_us_per_forward, format_us(r.device_us_per_forward)),
            cell(r.verdict),
            num(r.attention_share, None if r.attention_share is None
                else f"{r.attention_share:.0%}"),
            num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
            cell(r.sdpa_backend)])
    return table


def _phases(region: RegionReport, anchor: str) -> Table:
    table = Table(name=f"{anchor}-phases-{region.name}",
                  caption=f"{region.name}: phases of a step (wall time; attention's work "
                          "in each)",
                  columns=["phase", "time per step", "share of the step", "work per step",
                           "attention per step", "attention share"])
    for p in region.phases:
        table.rows.append([
            cell(p.name), num(p.us, format_us(p.us)), num(p.share, f"{p.share:.0%}"),
            num(p.work_us, format_us(p.work_us)),
            num(p.attention_us, format_us(p.attention_us)),
            num(p.attention_share, None if p.attention_share is None
                else f"{p.attention_share:.1%}")])
    return table


def _kernels(region: RegionReport, anchor: str) -> Table:
    unit = "kernels" if region.kernel_source == "kernels" else "compute ops (CPU trace)"
    table = Table(name=f"{anchor}-kernels-{region.name}",
                  caption=f"{region.name}: {unit} per forward, with decoded names",
                  columns=["name", "decoded", "family", "per forward", "mean", "share",
                           "launched by", "dtype", "tensor cores", "occupancy (CUPTI)",
                           "theoretical occupancy", "note"])
    for k in region.kernels:
        table.rows.append([
            cell(k.name), cell(k.short), cell(k.family), num(k.per_forward),
            num(k.mean_us, format_us(k.mean_us)), num(k.share, f"{k.share:.0%}"),
            cell(k.launched_by), cell(k.dtype),
            cell({True: "yes", False: "no", None: "—"}[k.tensor_cores]),
            num(k.occupancy, None if k.occupancy is None else k.occupancy_text()),
            num(k.theoretical_occupancy, k.theoretical_text()),
            cell(k.note or "")])
    return table


def _ops(region: RegionReport, anchor: str) -> Table:
    table = Table(name=f"{anchor}-ops-{region.name}", caption=f"{region.name}: CPU ops",
                  columns=["op", "per forward", "self / forward", "total / forward"])
    n = region.instances or 1  # the record's times are summed over the region's forwards
    for o in region.ops:
        table.rows.append([cell(o.name), num(o.per_forward),
                           num(o.self_us / n, format_us(o.self_us / n)),
                           num(o.total_us / n, format_us(o.total_us / n))])
    return table


def _breakdown(report: TraceReport, anchor: str) -> Table:
    table = Table(name=f"{anchor}-breakdown", caption="device time over the whole trace",
                  columns=["kernel", "decoded", "category", "count", "total", "mean", "share"])
    for k in report.breakdown.kernels:
        table.rows.append([cell(k.name), cell(k.short), cell(k.category), num(k.count),
                           num(k.total_us, format_us(k.total_us)),
                           num(k.mean_us, format_us(k.mean_us)),
                           num(k.share, f"{k.share:.1%}")])
    return table
