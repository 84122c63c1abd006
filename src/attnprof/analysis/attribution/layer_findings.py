"""The trace rules, run per layer and reported once per model.

Each layer label becomes a region (every call of the layer an instance), the usual region
passes and findings rules run over those regions, and the findings of one rule are merged
into one, naming the layers it fired in — "the mask is rebuilt in layers 0 to 31" once, not
32 times.
"""

from __future__ import annotations

import re

from attnprof.analysis.attribution.implementation import layer_list
from attnprof.analysis.findings import FindingContext, run_rules
from attnprof.analysis.index.device_events import DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.regions import find_regions
from attnprof.analysis.index.views import view_regions
from attnprof.analysis.passes import build_region_report
from attnprof.errors import UsageError
from attnprof.knowledge.annotations import MODULE_PREFIX, module_label
from attnprof.record.finding import Finding
from attnprof.record.trace_report import BreakdownReport, TraceReport

__all__ = ["LAYER_PATTERN", "layer_findings"]

LAYER_PATTERN = "^" + re.escape(module_label("layer", ""))
_LAYER_NAME = len(MODULE_PREFIX + "layer::")


def layer_findings(ops: OpIndex, devices: DeviceEvents, trace_device: str,
                   breakdown: BreakdownReport) -> list[Finding]:
    """Every rule's findings over the layers, one per rule and title, with the layers
    (``breakdown``: the trace's kernel breakdown, which the rules' report carries)."""
    try:
        regions = find_regions(ops, LAYER_PATTERN)
    except UsageError:  # no layer label: nothing to run per layer
        return []
    views, _ = view_regions(ops, devices, regions, trace_device)
    report = TraceReport(source=ops.trace.meta.source, device=trace_device, device_names=[],
                         rank=None, world_size=None, events=ops.trace.meta.n_events,
                         regions=[build_region_report(v) for v in views],
                         breakdown=breakdown, findings=[])
    ctx = FindingContext(report=report, views=tuple(views), ops=ops, devices=devices)
    merged: dict[tuple[str, str], Finding] = {}
    layers_of: dict[tuple[str, str], list[str]] = {}
    for f in run_rules(ctx):
        key = (f.rule, _generic(f.title))
        layer = (f.region or "")[_LAYER_NAME:] or "?"
        if key not in merged:
            merged[key] = f
            layers_of[key] = []
        if layer not in layers_of[key]:
            layers_of[key].append(layer)
    out = []
    for key, f in merged.items():
        layers = layers_of[key]
        shown = layer_list(layers)
        out.append(Finding(rule=f.rule, severity=f.severity, title=f.title,
                           evidence=[*f.evidence, f"fires in {len(layers)} of {len(views)} "
                                                  f"layers: {shown}"],
                           fix=f.fix, region=None, data={**f.data, "layers": layers}))
    return out


def _generic(title: str) -> str:
    """A title with its numbers taken out, so one rule's findings in different layers
    (different times and sizes) merge."""
    return re.sub(r"\d+(?:\.\d+)?", "#", title)
