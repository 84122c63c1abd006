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

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from attnprof.analysis.attribution.backward import book_backward
from attnprof.analysis.attribution.booking import ATTENTION_GROUP, Booking, book_step
from attnprof.analysis.attribution.capture_noise import (
    capture_noise,
    capture_noise_findings,
    median,
)
from attnprof.analysis.attribution.implementation import (
    actual_implementation,
    implementation_findings,
    matches_request,
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
from attnprof.record.trace_report import BreakdownReport

__all__ = ["attribute_model"]

_MODEL_REGION = REGION_PREFIX + "model/"
_MODEL_PARTS = ("layers", "embedding", "position", "head", "other", "unattributed")


def attribute_model(ops: OpIndex, devices: DeviceEvents, views: list[RegionView],
                    breakdown: BreakdownReport) -> ModelAttribution | None:
    """The attribution of the trace's model step region (``None`` without model labels);
    ``breakdown`` is the trace's, already computed by the caller."""
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
    basis = "device" if on_device else "work"
    steps = len(bookings)
    layers = _layers(index, bookings, memory, on_device)
    requested = requested_of(view.name)
    for layer in layers:
        layer.requested = requested
        layer.as_requested = matches_request(requested, layer.actual)
    parts = _model_parts(bookings, on_device)
    total = _sum(parts)
    att = _sum(c for layer in layers for c in layer.components if c.group == "attention")
    core = _sum(c for layer in layers for c in layer.components if c.name == "core")
    whole = total.on(basis)
    found = implementation_findings(requested, [(lay.name, lay.actual) for lay in layers])
    wait, extra_faults = capture_noise(ops.trace.meta.attnprof)
    found += layer_findings(ops, devices, view.trace_device, breakdown)
    found += capture_noise_findings(wait, extra_faults, view.name)
    for p in parts:
        p.share = p.on(basis) / whole if whole > 0 else 0.0
    return ModelAttribution(
        region=view.name, steps=steps, time_basis=basis,  # type: ignore[arg-type]
        kernel_source="kernels" if on_device else "cpu-ops", total_cpu_us=total.cpu_us,
        total_device_us=total.device_us if on_device else None,
        total_work_us=None if on_device else total.work_us,
        attention_cpu_us=att.cpu_us, attention_device_us=att.device_us if on_device else None,
        attention_work_us=None if on_device else att.work_us,
        attention_share=att.on(basis) / whole if whole > 0 else None,
        core_share=core.on(basis) / whole if whole > 0 else None,
        parts=parts, layers=layers, backward_attributed=any(backward), requested=requested,
        findings=found, cpu_wait=wait, extra_fault_bytes=extra_faults)


def _sum(components: Iterable[ComponentTime]) -> ComponentTime:
    cpu = dev = work = 0.0
    for c in components:
        cpu += c.cpu_us
        dev += c.device_us or 0.0
        work += c.work_us or 0.0
    return ComponentTime(name="sum", group="rest", cpu_us=cpu, device_us=dev, work_us=work)


Times = dict[str, list[float]]  # component -> [cpu, device, work] µs


def _medians(per_step: list[Times]) -> Times:
    """Each component's median over the steps (0 in a step that lacked it): one step
    slowed by another process, or by a page fault, does not skew the figure."""
    names = list(dict.fromkeys(n for step in per_step for n in step))
    return {n: [median(step.get(n, [0.0, 0.0, 0.0])[k] for step in per_step)
                for k in range(3)] for n in names}


def _add(acc: Times, name: str, booked: Any) -> None:
    slot = acc.setdefault(name, [0.0, 0.0, 0.0])
    slot[0] += booked.cpu_us
    slot[1] += booked.device_us
    slot[2] += booked.work_us


def _component(name: str, times: list[float], on_device: bool,
               peak: int | None = None) -> ComponentTime:
    return ComponentTime(name=name, group="attention" if name in ATTENTION_GROUP else "rest",
                         cpu_us=times[0], device_us=times[1] if on_device else None,
                         work_us=None if on_device else times[2], peak_memory_bytes=peak)


def _model_parts(bookings: list[Booking], on_device: bool) -> list[ComponentTime]:
    per_step: list[Times] = []
    for b in bookings:
        acc: Times = {}
        for (layer, comp), booked in b.booked.items():
            _add(acc, "layers" if layer >= 0 else comp, booked)
        per_step.append(acc)
    med = _medians(per_step)
    order = [*_MODEL_PARTS, *sorted(set(med) - set(_MODEL_PARTS))]
    parts = [_component(n, med[n], on_device) for n in order if n in med]
    for p in parts:
        p.group = "attention" if p.name == "core" else "rest"
    return parts


def _layers(index: LabelIndex, bookings: list[Booking], memory: MemoryTimeline,
            on_device: bool) -> list[LayerReport]:
    """Per layer name, the median over the steps."""
    names: list[str] = []
    per: dict[str, list[tuple[Booking, int]]] = defaultdict(list)
    for b in bookings:
        for pos, name in b.layer_names.items():
            if name not in per:
                names.append(name)
            per[name].append((b, pos))
    return [_layer(index, name, k, per[name], memory, on_device)
            for k, name in enumerate(names)]


def _layer(index: LabelIndex, name: str, k: int, found: list[tuple[Booking, int]],
           memory: MemoryTimeline, on_device: bool) -> LayerReport:
    """One layer, every figure the median over the steps it ran in."""
    ops = index.ops
    per_step: list[Times] = []
    peaks: dict[str, int | None] = {}
    core_kernels: list[int] = []
    kernel_names: list[str] = []
    core_ops: list[str] = []
    dispatched: list[str] = []
    backward: list[float] = []
    layer_peak: int | None = None
    modules: list[str] = []
    inferred = False
    for b, pos in found:
        acc: Times = {}
        per_step.append(acc)
        kernels = 0
        backward.append(b.backward_of_layer.get(pos, 0.0))
        layer_peak = _max(layer_peak, memory.peak_in(float(ops.start[pos]), float(ops.end[pos])))
        inferred |= pos in b.inferred_core
        for holder in b.attention.get(pos, []):
            if index.labels[holder].detail not in modules:
                modules.append(index.labels[holder].detail)
        for (layer, comp), booked in b.booked.items():
            if layer != pos:
                continue
            _add(acc, comp, booked)
            if comp in ("unattributed", "attention_other"):
                continue  # a container's own time: no range of its own to take a peak of
            for lab in booked.labels:
                peaks[comp] = _max(peaks.get(comp), memory.peak_in(
                    float(ops.start[lab]), float(ops.end[lab])))
                if comp == "core":
                    n, names = _core_work(index, lab, on_device)
                    kernels += n
                    kernel_names.extend(names)
                    core_ops.extend(ops.names[j] for j in range(lab, int(ops.last[lab]) + 1))
                    if index.labels[lab].family == "part":
                        dispatched.append(index.labels[lab].detail)
        core_kernels.append(kernels)
    basis = "device" if on_device else "work"
    med = _medians(per_step)
    comps = [_component(c, med[c], on_device, peaks.get(c))
             for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS) if c in med]
    total = _sum(comps)
    for c in comps:
        c.share = c.on(basis) / total.on(basis) if total.on(basis) > 0 else 0.0
    att = _sum(c for c in comps if c.group == "attention")
    top = max((c for c in comps if c.group == "attention"), key=lambda c: c.on(basis),
              default=None)
    return LayerReport(
        name=name, index=k, cpu_us=total.cpu_us,
        device_us=total.device_us if on_device else None,
        work_us=None if on_device else total.work_us, peak_memory_bytes=layer_peak,
        attention_cpu_us=att.cpu_us,
        attention_device_us=att.device_us if on_device else None,
        attention_work_us=None if on_device else att.work_us,
        attention_share=att.on(basis) / total.on(basis) if total.on(basis) > 0 else None,
        components=comps, top_component=top.name if top else None,
        core_kernels=float(median(core_kernels)),
        core_kernel_names=list(dict.fromkeys(kernel_names)),
        attention_modules=modules,
        actual=actual_implementation(dispatched, core_ops, inferred),
        core_source="inferred" if inferred else "label",
        backward_cpu_us=median(backward) if any(backward) else None)


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
