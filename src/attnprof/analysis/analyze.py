"""Analyse one loaded trace: regions, kernels, ops, time, memory, and findings.

:func:`analyze_trace` is the whole pipeline, in the order data flows::

    index the CPU ops ─> link device events to launches and ops ─> find regions
        ─> view each region ─> region passes ─> RegionReport
        ─> kernel breakdown ─> findings rules ─> TraceReport

Everything is a pure function of the trace (and, for ``attnprof profile``, the run
record's row for the variant, whose warnings explain SDPA's refusals). Nothing here
imports torch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from attnprof.analysis.findings import RULES, FindingContext, Rule, run_rules
from attnprof.analysis.index.device_events import DeviceEvents, link_device_events
from attnprof.analysis.index.op_index import index_cpu_ops
from attnprof.analysis.index.pairs import distinct
from attnprof.analysis.index.regions import find_regions
from attnprof.analysis.index.views import view_regions
from attnprof.analysis.passes import REGION_PASSES, RegionPass, build_region_report
from attnprof.analysis.passes.breakdown import kernel_breakdown
from attnprof.knowledge.trace_categories import RUNTIME_CATEGORIES
from attnprof.record.trace_report import (
    TraceReport,
)
from attnprof.spec.workload import Workload
from attnprof.trace import Trace

if TYPE_CHECKING:
    from attnprof.record.run import RunRecord

__all__ = ["analyze_trace", "trace_device"]

def analyze_trace(trace: Trace, *, result: Any = None, workload: Workload | None = None,
                  region_pattern: str | None = None,
                  passes: tuple[RegionPass, ...] = REGION_PASSES,
                  rules: tuple[Rule, ...] = RULES) -> TraceReport:
    """The :class:`~attnprof.record.trace_report.TraceReport` of ``trace``.

    ``result`` is the run record's :class:`~attnprof.record.run.VariantResult` for the traced
    variant, when there is one; rules use its warnings as evidence. ``workload`` overrides
    the one in the trace's ``attnprof`` metadata (foreign traces have none: rules then read
    shapes and kernel names only). ``region_pattern`` picks the user annotations to treat as
    regions (see :func:`~attnprof.analysis.index.regions.find_regions`).
    """
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    device = trace_device(trace, devices)
    views, unassigned = view_regions(ops, devices, find_regions(ops, region_pattern),
                                     device)
    meta = getattr(trace.meta, "attnprof", None)
    meta = meta if isinstance(meta, dict) else None
    dist = trace.meta.distributed
    report = TraceReport(
        source=trace.meta.source,
        device=device,
        device_names=list(dict.fromkeys(
            str(p["name"]) for p in trace.meta.device_properties if p.get("name"))),
        rank=dist.rank if dist else None,
        world_size=dist.world_size if dist else None,
        events=trace.meta.n_events,
        regions=[build_region_report(v, passes) for v in views],
        breakdown=kernel_breakdown(trace),
        findings=[],
        attnprof=meta,
        unassigned_device_events=len(unassigned),
        unassigned_device_us=math.fsum(
            (devices.end[unassigned] - devices.start[unassigned]).tolist()),
        skipped_events=dict(trace.meta.skipped_events),
    )
    ctx = FindingContext(report=report, views=tuple(views), ops=ops, devices=devices,
                         workload=workload or _workload(meta), result=result)
    report.findings = run_rules(ctx, rules)
    return report


def trace_device(trace: Trace, devices: DeviceEvents) -> str:
    """``"rocm"`` for HIP runtimes/AMD GPUs, ``"cuda"`` for other GPU traces, else ``"cpu"``.

    A GPU trace is one with device events, GPU runtime calls or device properties: a trace
    recorded without CUPTI activity has no kernels but is still from a GPU.
    """
    t = trace.events
    calls = distinct(t.name[t.mask_cat(*RUNTIME_CATEGORIES)])
    runtime = [t.strings[i] for i in calls.tolist()]
    props = trace.meta.device_properties
    if not len(devices) and not runtime and not props:
        return "cpu"
    if any(name.startswith("hip") for name in runtime):
        return "rocm"
    if any("AMD" in str(p.get("name", "")) for p in props):
        return "rocm"
    return "cuda"


def _workload(meta: dict[str, Any] | None) -> Workload | None:
    """The workload from the trace's attnprof metadata (None when absent or unreadable)."""
    data = meta.get("workload") if meta else None
    if not isinstance(data, dict):
        return None
    try:
        return Workload.from_dict(data).validate()
    except Exception:  # metadata from another version: analyse without it
        return None


def analyze_record(record: RunRecord) -> None:
    """Analyse every trace a run wrote and attach the report to its variant's row.

    The row goes along (its warnings explain SDPA refusals), and so does the workload, so
    the rules can judge sizes against the shapes that ran.
    """
    from attnprof.trace import load_trace

    workload = record.workload_spec()
    for row in record.results:
        if row.trace:
            row.analysis = analyze_trace(load_trace(row.trace), result=row, workload=workload)
