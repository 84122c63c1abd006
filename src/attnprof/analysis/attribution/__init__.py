"""Per-layer attribution of a model trace: a pure pass over the loaded trace.

:func:`attribute_model` reads attnprof's model labels (:mod:`attnprof.knowledge.annotations`)
out of one step region and returns the
:class:`~attnprof.record.model_attribution.ModelAttribution`: per layer, the time (wall,
op and device) and peak memory of each attention component and of the rest, attention's
share, the kernels (or CPU compute ops) in the core, and which implementation ran.
Attribution goes by the code region an op ran in, never by its name. It needs nothing but
the trace, so ``attnprof analyze`` of a saved model trace shows the same table as the run
that wrote it.

Each traced step is booked on its own; the figures reported are one step's — the one whose
attention share is the median — so they add up as the step did (a sum of per-component
medians does not, and its shares can pass 100%).
"""

from __future__ import annotations

from collections.abc import Iterable

from attnprof.analysis.attribution.backward import book_backward
from attnprof.analysis.attribution.booking import ATTENTION_GROUP, Booking, book_step, kind_of
from attnprof.analysis.attribution.capture_noise import (
    capture_noise,
    capture_noise_findings,
    own_threads,
    unreliable_reason,
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
from attnprof.analysis.passes.attention_time import attention_time, summarize_attention
from attnprof.knowledge.annotations import REGION_PREFIX
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.model_attribution import (
    ATTENTION_COMPONENTS,
    ATTENTION_KINDS,
    REST_COMPONENTS,
    ComponentTime,
    LayerReport,
    ModelAttribution,
)
from attnprof.record.trace_report import BreakdownReport

__all__ = ["attribute_model"]

_MODEL_REGION = REGION_PREFIX + "model/"
_MODEL_PARTS = ("layers", "embedding", "position", "head", "other", "unattributed")
_CORES = ("core", "cross_core")


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
    on_device = view.on_device
    basis = "device" if on_device else "cpu"
    # A step with no label in it ran none of the model (the step a profiler stopped early
    # leaves open, as a capture of a loop that ended before its schedule does): no step.
    bookings = [book_step(index, inst.op) for inst in view.instances
                if inst.op >= 0 and index.within(inst.op)]
    backward = [book_backward(index, b) for b in bookings]
    shares = [_attention_share(b, basis) for b in bookings]
    step = _median_step(shares)
    booking = bookings[step]
    layers = _layers(index, booking, memory_timeline(ops), on_device)
    requested = requested_of(view.name)
    for layer in layers:
        layer.requested = requested
        layer.as_requested = matches_request(requested, layer.actual)
    parts = _model_parts(booking, on_device)
    total = _sum(parts)
    whole = total.on(basis)
    attention = [c for layer in layers for c in layer.components if c.group == "attention"]
    attention += [p for p in parts if p.group == "attention"]
    att = _sum(attention)
    core = _sum(c for c in attention if c.name in _CORES)
    kinds = _kinds(attention, on_device)
    for p in (*parts, *kinds):
        p.share = _fraction(p.on(basis), whole) or 0.0
    found = implementation_findings(requested, [(lay.name, lay.actual) for lay in layers])
    wait, extra_faults = capture_noise(ops.trace.meta.attnprof)
    found += layer_findings(ops, devices, view.trace_device, breakdown)
    found += capture_noise_findings(wait, extra_faults, view.name,
                                    own=own_threads(ops.trace.meta.attnprof))
    known = [s for s in shares if s is not None]
    return ModelAttribution(
        region=view.name, steps=len(bookings), time_basis=basis,  # type: ignore[arg-type]
        kernel_source="kernels" if on_device else "cpu-ops", total_cpu_us=total.cpu_us,
        total_device_us=total.device_us if on_device else None,
        total_work_us=None if on_device else total.work_us,
        attention_cpu_us=att.cpu_us, attention_device_us=att.device_us if on_device else None,
        attention_work_us=None if on_device else att.work_us,
        attention_share=shares[step],  # att / whole, summed as the step's share was
        core_share=_fraction(core.on(basis), whole),
        parts=parts, layers=layers, backward_attributed=any(backward), requested=requested,
        findings=found, cpu_wait=wait, extra_fault_bytes=extra_faults,
        step_attention_shares=known, step=step, kinds=kinds,
        # On a GPU trace shares are of kernel time, which a CPU's wait or page faults do
        # not stretch (they widen the gaps between kernels): only disagreeing steps count.
        unreliable=unreliable_reason(None if on_device else wait,
                                     None if on_device else extra_faults, known),
        # The one attention time, from the same region as analyze's (not the labels).
        attention_time=summarize_attention(attention_time(view), on_device=on_device))


def _fraction(part: float, whole: float) -> float | None:
    """``part / whole`` kept in [0, 1] (``None`` when there is no whole): a part booked from
    the same step cannot exceed it, but float sums can by an ulp."""
    return min(max(part / whole, 0.0), 1.0) if whole > 0 else None


def _attention_share(booking: Booking, basis: str) -> float | None:
    """One step's attention share on ``basis``, from its booking."""
    k = {"cpu": 0, "device": 1}.get(basis, 2)
    times = {key: (b.cpu_us, b.device_us, b.work_us)[k] for key, b in booking.booked.items()}
    whole = sum(times.values())
    att = sum(t for (layer, comp), t in times.items()
              if comp in ATTENTION_GROUP and (layer >= 0 or comp in _CORES))
    return _fraction(att, whole)


def _median_step(shares: list[float | None]) -> int:
    """The step whose attention share is the median (the lower one of an even count: a
    step that ran, not an average of two)."""
    known = sorted((s, i) for i, s in enumerate(shares) if s is not None)
    if not known:
        return 0
    return known[(len(known) - 1) // 2][1]


def _sum(components: Iterable[ComponentTime]) -> ComponentTime:
    cpu = dev = work = 0.0
    for c in components:
        cpu += c.cpu_us
        dev += c.device_us or 0.0
        work += c.work_us or 0.0
    return ComponentTime(name="sum", group="rest", cpu_us=cpu, device_us=dev, work_us=work)


Times = dict[str, list[float]]  # component -> [cpu, device, work] µs


def _add(acc: Times, name: str, booked: object) -> None:
    slot = acc.setdefault(name, [0.0, 0.0, 0.0])
    slot[0] += booked.cpu_us  # type: ignore[attr-defined]
    slot[1] += booked.device_us  # type: ignore[attr-defined]
    slot[2] += booked.work_us  # type: ignore[attr-defined]


def _component(name: str, times: list[float], on_device: bool,
               peak: int | None = None) -> ComponentTime:
    return ComponentTime(name=name, group="attention" if name in ATTENTION_GROUP else "rest",
                         cpu_us=times[0], device_us=times[1] if on_device else None,
                         work_us=None if on_device else times[2], peak_memory_bytes=peak)


def _kinds(attention: list[ComponentTime], on_device: bool) -> list[ComponentTime]:
    """Attention components summed by kind (``self_attention``, ``cross_attention``)."""
    acc: Times = {}
    for c in attention:
        slot = acc.setdefault(kind_of(c.name), [0.0, 0.0, 0.0])
        slot[0] += c.cpu_us
        slot[1] += c.device_us or 0.0
        slot[2] += c.work_us or 0.0
    return [_component(k, acc[k], on_device) for k in ATTENTION_KINDS if k in acc]


def _model_parts(booking: Booking, on_device: bool) -> list[ComponentTime]:
    acc: Times = {}
    for (layer, comp), booked in booking.booked.items():
        _add(acc, "layers" if layer >= 0 else comp, booked)
    order = [*_MODEL_PARTS, *sorted(set(acc) - set(_MODEL_PARTS))]
    parts = [_component(n, acc[n], on_device) for n in order if n in acc]
    for p in parts:
        p.group = "attention" if p.name in _CORES else "rest"
    return parts


def _layers(index: LabelIndex, booking: Booking, memory: MemoryTimeline,
            on_device: bool) -> list[LayerReport]:
    """Per layer name (a layer called twice in the step: both calls), in the order run."""
    per: dict[str, list[int]] = {}
    for pos, name in booking.layer_names.items():
        per.setdefault(name, []).append(pos)
    return [_layer(index, name, k, booking, positions, memory, on_device)
            for k, (name, positions) in enumerate(per.items())]


def _layer(index: LabelIndex, name: str, k: int, b: Booking, positions: list[int],
           memory: MemoryTimeline, on_device: bool) -> LayerReport:
    """One layer of the step."""
    ops = index.ops
    acc: Times = {}
    peaks: dict[str, int | None] = {}
    kernel_names: list[str] = []
    core_ops: list[str] = []
    dispatched: list[str] = []
    modules: list[str] = []
    kernels = 0
    backward = 0.0
    layer_peak: int | None = None
    inferred = False
    for pos in positions:
        backward += b.backward_of_layer.get(pos, 0.0)
        layer_peak = _max(layer_peak, memory.peak_in(float(ops.start[pos]), float(ops.end[pos])))
        inferred |= pos in b.inferred_core
        for holder in b.attention.get(pos, []):
            if index.labels[holder].detail not in modules:
                modules.append(index.labels[holder].detail)
        for (layer, comp), booked in b.booked.items():
            if layer != pos:
                continue
            _add(acc, comp, booked)
            if comp in ("unattributed", "attention_other", "cross_attention_other"):
                continue  # a container's own time: no range of its own to take a peak of
            for lab in booked.labels:
                peaks[comp] = _max(peaks.get(comp), memory.peak_in(
                    float(ops.start[lab]), float(ops.end[lab])))
                if comp in _CORES:
                    n, names = _core_work(index, lab, on_device)
                    kernels += n
                    kernel_names.extend(names)
                    core_ops.extend(ops.names[j] for j in range(lab, int(ops.last[lab]) + 1))
                    if index.labels[lab].family == "part":
                        dispatched.append(index.labels[lab].detail)
    basis = "device" if on_device else "cpu"
    comps = [_component(c, acc[c], on_device, peaks.get(c))
             for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS) if c in acc]
    comps += [_component(c, acc[c], on_device, peaks.get(c))
              for c in acc if c not in ATTENTION_COMPONENTS and c not in REST_COMPONENTS]
    total = _sum(comps)
    for c in comps:
        c.share = _fraction(c.on(basis), total.on(basis)) or 0.0
    attention = [c for c in comps if c.group == "attention"]
    att = _sum(attention)
    kinds = _kinds(attention, on_device)
    for kind in kinds:
        kind.share = _fraction(kind.on(basis), total.on(basis)) or 0.0
    top = max(attention, key=lambda c: c.on(basis), default=None)
    return LayerReport(
        name=name, index=k, cpu_us=total.cpu_us,
        device_us=total.device_us if on_device else None,
        work_us=None if on_device else total.work_us, peak_memory_bytes=layer_peak,
        attention_cpu_us=att.cpu_us,
        attention_device_us=att.device_us if on_device else None,
        attention_work_us=None if on_device else att.work_us,
        attention_share=_fraction(att.on(basis), total.on(basis)),
        components=comps, top_component=top.name if top else None,
        core_kernels=float(kernels),
        core_kernel_names=list(dict.fromkeys(kernel_names)),
        attention_modules=modules,
        actual=actual_implementation(dispatched, core_ops, inferred),
        core_source="inferred" if inferred else "label",
        backward_cpu_us=backward if backward else None, kinds=kinds)


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
