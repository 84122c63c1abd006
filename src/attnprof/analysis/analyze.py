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
import re
from collections.abc import Callable
from typing import Any

from attnprof.analysis.contended_steps import contention_findings, read_contention
from attnprof.analysis.findings import RULES, FindingContext, Rule, run_rules
from attnprof.analysis.index.device_events import link_device_events
from attnprof.analysis.index.device_kind import identify_device
from attnprof.analysis.index.op_index import OpIndex, index_cpu_ops
from attnprof.analysis.index.pairs import names_matching
from attnprof.analysis.index.regions import find_regions
from attnprof.analysis.index.views import view_regions
from attnprof.analysis.passes import REGION_PASSES, RegionPass, build_region_report
from attnprof.analysis.passes.breakdown import kernel_breakdown
from attnprof.analysis.passes.timeline import step_timeline
from attnprof.knowledge.annotations import MODULE_PREFIX, PART_PREFIX
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.trace_report import (
    TraceReport,
)
from attnprof.trace import Trace
from attnprof.workload.problem import Workload

__all__ = ["analyze_files", "analyze_trace"]


def analyze_trace(trace: Trace, *, result: Any = None, workload: Workload | None = None,
                  region_pattern: str | None = None,
                  passes: tuple[RegionPass, ...] = REGION_PASSES,
                  rules: tuple[Rule, ...] = RULES,
                  on_head: Callable[[TraceReport], None] | None = None) -> TraceReport:
    """The :class:`~attnprof.record.trace_report.TraceReport` of ``trace``.

    ``result`` is the run record's :class:`~attnprof.record.compare.VariantResult` for the traced
    variant, when there is one; rules use its warnings as evidence. ``workload`` overrides
    the one in the trace's ``attnprof`` metadata (foreign traces have none: rules then read
    shapes and kernel names only). ``region_pattern`` picks the user annotations to treat as
    regions (see :func:`~attnprof.analysis.index.regions.find_regions`).

    ``on_head`` is called with the report as soon as everything but its findings, model
    attribution and timeline is final (about three quarters of the way), so a caller can
    start showing it; the same report object is then completed and returned.
    """
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    told = identify_device(trace)
    device = told.kind
    views, unassigned = view_regions(ops, devices, find_regions(ops, region_pattern),
                                     device)
    meta = getattr(trace.meta, "attnprof", None)
    meta = meta if isinstance(meta, dict) else None
    dist = trace.meta.distributed
    report = TraceReport(
        source=trace.meta.source,
        device=device,
        device_evidence=told.evidence,
        device_categories=told.device_categories,
        unmodelled_categories=told.unmodelled_categories,
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
        dropped_entries=dict(trace.meta.dropped_entries),
        unusable_values=dict(trace.meta.unusable_values),
    )
    if meta is None:  # a foreign trace: its own timings are the only sign of its moment
        report.contention = read_contention(views, report.regions)
    if on_head is not None:
        on_head(report)
    ctx = FindingContext(report=report, views=tuple(views), ops=ops, devices=devices,
                         workload=workload or _workload(meta), result=result)
    report.findings = run_rules(ctx, rules)
    if meta is None:
        report.findings += contention_findings(report.contention)
    # A model trace (attnprof's model labels): where each layer's time went.
    if _has_model_labels(ops):
        # Imported here: the attribution (eight modules, a third of the analysis' import
        # time) is needed by model traces only, and most traces analysed are not.
        from attnprof.analysis.attribution import attribute_model

        report.model = attribute_model(ops, devices, views, report.breakdown)
    report.timeline = step_timeline(views)
    return report


_MODEL_LABEL = re.compile(f"^(?:{re.escape(MODULE_PREFIX)}|{re.escape(PART_PREFIX)})")


def _has_model_labels(ops: OpIndex) -> bool:
    """Whether any annotation is one of attnprof's model labels (what
    :func:`~attnprof.analysis.attribution.attribute_model` needs; without one it returns
    ``None``)."""
    annotations = ops.name[ops.annotation]
    strings = ops.trace.events.strings
    return bool(names_matching(annotations, strings.__getitem__, _MODEL_LABEL).any())


def _workload(meta: dict[str, Any] | None) -> Workload | None:
    """The workload from the trace's attnprof metadata (None when absent or unreadable)."""
    data = meta.get("workload") if meta else None
    if not isinstance(data, dict):
        return None
    try:
        return Workload.from_dict(data).validate()
    except Exception:  # metadata from another version: analyse without it
        return None


def analyze_files(paths: list[str], *, region_pattern: str | None = None,
                  optional: set[str] | frozenset[str] = frozenset(),
                  on_head: Callable[[TraceReport], None] | None = None) -> AnalyzeRecord:
    """Load and analyse each trace file in turn; the record of ``attnprof analyze``.

    Every trace is read and analysed before the record exists, so an unreadable file fails
    the whole call (with :class:`~attnprof.errors.UsageError`) and nothing is written —
    except the files in ``optional`` (those found in a folder): one of them that cannot be
    read is listed in the record's ``unreadable`` and the others are analysed all the same.
    ``on_head``: :func:`analyze_trace`'s, for each trace.
    """
    from attnprof.errors import UsageError
    from attnprof.record.analyze import UnreadableTrace
    from attnprof.trace import load_trace

    reports, unreadable = [], []
    for path in paths:
        try:
            reports.append(analyze_trace(load_trace(path), region_pattern=region_pattern,
                                         on_head=on_head))
        except (UsageError, OSError) as exc:
            if path not in optional:
                raise
            reason = str(exc) if isinstance(exc, UsageError) else exc.strerror or str(exc)
            unreadable.append(UnreadableTrace(source=path, reason=reason))
    return AnalyzeRecord(reports=reports, unreadable=unreadable, status="complete")
