"""Per-layer attribution of a model trace: a pure pass over the loaded trace.

:func:`attribute_model` reads attnprof's model labels (:mod:`attnprof.knowledge.annotations`)
out of one step region and returns the
:class:`~attnprof.record.model_attribution.ModelAttribution`: per layer, the time (CPU and
device) and peak memory of each attention component and of the rest, attention's share, the
kernels (or CPU compute ops) in the core, and which implementation ran. Attribution goes by
the code region an op ran in, never by its name. It needs nothing but the trace, so
``attnprof analyze`` of a saved model trace shows the same table as the run that wrote it.
"""

from __future__ import annotations

import math
from collections import defaultdict

from attnprof.analysis.attribution.backward import book_backward
from attnprof.analysis.attribution.booking import ATTENTION_GROUP, Booking, book_step
from attnprof.analysis.attribution.implementation import (
    actual_implementation,
    implementation_findings,
    requested_of,
)
from attnprof.analysis.attribution.labels import LabelIndex, index_labels
from attnprof.analysis.attribution.layer_findings import layer_findings
from attnprof.analysis.attribution.memory import MemoryTimeline, memory_timeline
from attnprof.analysis.index.compute_ops import compute_ops
from attnprof.analysis.index.device_events import DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.views import RegionView
from attnprof.knowledge.annotations import REGION_PREFIX
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.model_attribution import (
    ATTENTION_COMPONENTS,
    REST_COMPONENTS,
    ComponentTime,
    LayerReport,
    ModelAttribution,
)

__all__ = ["attribute_model"]

_MODEL_REGION = REGION_PREFIX + "model/"
_MODEL_PARTS = ("layers", "embedding", "position", "head", "other", "unattributed")


def attribute_model(ops: OpIndex, devices: DeviceEvents, views: list[RegionView],
                    *, findings: bool = True) -> ModelAttribution | None:
    """The attribution of the trace's model step region (``None`` without model labels)."""
    index = index_labels(ops, devices)
    if not index:
        return None
    chosen = [v for v in views if v.name.startswith(_MODEL_REGION)] or list(views)
    view = next((v for v in chosen if v.instances and v.instances[0].op >= 0
                 and index.within(v.instances[0].op)), None)
    if view is None:
        return None
    memory = memory_timeline(ops)
    bookings = [book_step(index, inst.op) for inst in view.instances]
    backward = [book_backward(index, b) for b in bookings]
    on_device = view.on_device
    steps = len(bookings)
    layers = _layers(index, bookings, memory, on_device, steps)
    requested = requested_of(view.name)
    totals = _model_parts(index, bookings, on_device, steps)
    total_cpu = sum(index.cpu_us(b.root) for b in bookings) / steps
    total_dev = (sum(index.device_us(b.root) for b in bookings) / steps) if on_device else None
    att_cpu = sum(layer.attention_cpu_us for layer in layers)
    att_dev = sum(layer.attention_device_us or 0.0 for layer in layers) if on_device else None
    core = sum(_value(c, on_device) for layer in layers for c in layer.components
               if c.name == "core")
    basis_total = (total_dev if on_device else total_cpu) or 0.0
    basis_att = (att_dev if on_device else att_cpu) or 0.0
    found = implementation_findings(requested, [(lay.name, lay.actual) for lay in layers])
    if findings:
        found += layer_findings(ops, devices, view.trace_device)
    return ModelAttribution(
        region=view.name, steps=steps, time_basis="device" if on_device else "cpu",
        kernel_source="kernels" if on_device else "cpu-ops", total_cpu_us=total_cpu,
        total_device_us=total_dev, attention_cpu_us=att_cpu, attention_device_us=att_dev,
        attention_share=basis_att / basis_total if basis_total > 0 else None,
        core_share=core / basis_total if basis_total > 0 else None,
        parts=_shares(totals, basis_total, on_device), layers=layers,
        backward_attributed=any(backward), requested=requested, findings=found)


def _value(c: ComponentTime, on_device: bool) -> float:
    return (c.device_us or 0.0) if on_device else c.cpu_us


def _shares(parts: list[ComponentTime], total: float, on_device: bool) -> list[ComponentTime]:
    for c in parts:
        c.share = _value(c, on_device) / total if total > 0 else 0.0
    return parts


def _model_parts(index: LabelIndex, bookings: list[Booking], on_device: bool,
                 steps: int) -> list[ComponentTime]:
    cpu: dict[str, float] = defaultdict(float)
    dev: dict[str, float] = defaultdict(float)
    for b in bookings:
        for (layer, comp), booked in b.booked.items():
            name = "layers" if layer >= 0 else comp
            cpu[name] += booked.cpu_us
            dev[name] += booked.device_us
    return [ComponentTime(name=n, group="attention" if n == "core" else "rest",
                          cpu_us=cpu[n] / steps, device_us=dev[n] / steps if on_device else None)
            for n in [*_MODEL_PARTS, *sorted(set(cpu) - set(_MODEL_PARTS))] if n in cpu]


def _layers(index: LabelIndex, bookings: list[Booking], memory: MemoryTimeline,
            on_device: bool, steps: int) -> list[LayerReport]:
    """Per layer name, averaged over the steps."""
    names: list[str] = []
    per: dict[str, list[tuple[Booking, int]]] = defaultdict(list)
    for b in bookings:
        for pos, name in b.layer_names.items():
            if name not in per:
                names.append(name)
            per[name].append((b, pos))
    return [_layer(index, name, k, per[name], memory, on_device, steps)
            for k, name in enumerate(names)]


def _layer(index: LabelIndex, name: str, k: int, found: list[tuple[Booking, int]],
           memory: MemoryTimeline, on_device: bool, steps: int) -> LayerReport:
    ops = index.ops
    cpu: dict[str, float] = defaultdict(float)
    dev: dict[str, float] = defaultdict(float)
    peaks: dict[str, int | None] = {}
    core_kernels = 0
    kernel_names: list[str] = []
    core_ops: list[str] = []
    dispatched: list[str] = []
    layer_cpu = layer_dev = backward = 0.0
    layer_peak: int | None = None
    modules: list[str] = []
    inferred = False
    for b, pos in found:
        layer_cpu += index.cpu_us(pos) + b.backward_of_layer.get(pos, 0.0)
        layer_dev += index.device_us(pos) + b.backward_device_of_layer.get(pos, 0.0)
        backward += b.backward_of_layer.get(pos, 0.0)
        layer_peak = _max(layer_peak, memory.peak_in(float(ops.start[pos]), float(ops.end[pos])))
        inferred |= pos in b.inferred_core
        for att in b.attention.get(pos, []):
            if index.labels[att].detail not in modules:
                modules.append(index.labels[att].detail)
        for (layer, comp), booked in b.booked.items():
            if layer != pos:
                continue
            cpu[comp] += booked.cpu_us
            dev[comp] += booked.device_us
            for lab in booked.labels:
                if comp in ("unattributed", "attention_other") and lab in b.layer_names:
                    continue
                if comp not in ("unattributed", "attention_other"):
                    peaks[comp] = _max(peaks.get(comp), memory.peak_in(
                        float(ops.start[lab]), float(ops.end[lab])))
                if comp == "core":
                    n, names = _core_work(index, lab, on_device)
                    core_kernels += n
                    kernel_names.extend(names)
                    core_ops.extend(ops.names[j] for j in range(lab, int(ops.last[lab]) + 1))
                    if index.labels[lab].family == "part":
                        dispatched.append(index.labels[lab].detail)
    comps = [ComponentTime(name=c, group="attention" if c in ATTENTION_GROUP else "rest",
                           cpu_us=cpu[c] / steps, device_us=dev[c] / steps if on_device else None,
                           peak_memory_bytes=peaks.get(c))
             for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS) if c in cpu]
    total = (layer_dev if on_device else layer_cpu) / steps
    for c in comps:
        c.share = _value(c, on_device) / total if total > 0 else 0.0
    attention = [c for c in comps if c.group == "attention"]
    att_cpu = math.fsum(c.cpu_us for c in attention)
    att_dev = math.fsum(c.device_us or 0.0 for c in attention) if on_device else None
    top = max(attention, key=lambda c: _value(c, on_device), default=None)
    return LayerReport(
        name=name, index=k, cpu_us=layer_cpu / steps,
        device_us=layer_dev / steps if on_device else None, peak_memory_bytes=layer_peak,
        attention_cpu_us=att_cpu, attention_device_us=att_dev,
        attention_share=((att_dev if on_device else att_cpu) or 0.0) / total
        if total > 0 else None,
        components=comps, top_component=top.name if top else None,
        core_kernels=core_kernels / steps, core_kernel_names=list(dict.fromkeys(kernel_names)),
        attention_modules=modules,
        actual=actual_implementation(dispatched, core_ops, inferred),
        core_source="inferred" if inferred else "label",
        backward_cpu_us=backward / steps if backward else None)


def _core_work(index: LabelIndex, label: int, on_device: bool) -> tuple[int, list[str]]:
    """Kernels launched in a core label (on a CPU trace: its compute ops) and their names."""
    ops = index.ops
    strings = ops.trace.events.strings
    if on_device:
        events = index.device_events(label)
        names = [decode_kernel_name(strings[int(i)]).short
                 for i in index.devices.name[events].tolist()]
        return len(events), names
    found, _work = compute_ops(ops, range(label + 1, int(ops.last[label]) + 1))
    return len(found), [ops.names[i] for i in found.tolist()]


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
