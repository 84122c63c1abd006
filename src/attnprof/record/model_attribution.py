"""Where a model's time goes, layer by layer: the attribution of one model trace.

:class:`ModelAttribution` is what :mod:`attnprof.analysis.attribution` reads out of a trace
whose steps carry attnprof's model labels (:mod:`attnprof.knowledge.annotations`). It is
part of the trace report (``TraceReport.model``), so ``attnprof analyze`` of a model trace
shows it too, and of every model run (``PhaseRun.attribution``).

Units as in the trace report: times in µs per step (``*_us``), bytes in ``*_bytes``.
``cpu_us`` is the wall time the CPU spent inside a label, everything it ran included
(Python, dispatch, ops); ``device_us`` the summed duration of the device events launched
inside it (``None`` on a CPU-only trace); ``work_us``, on a CPU-only trace, the part of
``cpu_us`` spent inside ATen ops (the outermost ones, so nothing counts twice), and
``cpu_us − work_us`` the time between ops (:meth:`ComponentTime.between_us`).

Shares are of the step's time on :attr:`ModelAttribution.time_basis`: the wall time on a
CPU trace (Python-level cost is cost: a per-head loop, a mask built in Python), the device
time on a GPU trace. Every figure comes from one traced step — the one whose attention
share is the median of the traced steps' — so in every report components add up to their
layer, layers and the model's other parts to the step, and no share leaves [0, 1]; the
other steps' shares are kept (``step_attention_shares``) as the spread. ``unattributed``
(in the model's parts) is the step less its top-level labels.

Attention in a layer is split by kind: ``self`` and ``cross`` (a decoder block's
attention over the encoder's output); a cross-attention module's components carry the
``cross_`` prefix (``cross_q_proj`` ... ``cross_core``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from attnprof.record.attention_time import AttentionTime
from attnprof.record.finding import Finding

__all__ = ["ATTENTION_COMPONENTS", "ATTENTION_KINDS", "CROSS_PREFIX", "REST_COMPONENTS",
           "SELF_COMPONENTS", "ComponentTime", "LayerReport", "ModelAttribution"]

#: Components of attention, in the order a forward runs them. ``attention_other``: time in
#: the attention module outside every labelled part (reshapes, transposes, copies).
SELF_COMPONENTS: tuple[str, ...] = (
    "q_proj", "k_proj", "v_proj", "qkv_proj", "position", "kv_cache", "core", "o_proj",
    "attention_other",
)
#: Prefix of a cross-attention module's components.
CROSS_PREFIX = "cross_"
ATTENTION_COMPONENTS: tuple[str, ...] = (
    *SELF_COMPONENTS, *(CROSS_PREFIX + c for c in SELF_COMPONENTS))
#: Attention's kinds, as :attr:`LayerReport.kinds` names them.
ATTENTION_KINDS: tuple[str, ...] = ("self_attention", "cross_attention")
#: The rest of a layer; ``unattributed``: time in the layer that no labelled module claims
#: (residual adds, dropout between modules).
REST_COMPONENTS: tuple[str, ...] = ("mlp", "norm", "other", "unattributed")

Group = Literal["attention", "rest"]


class ComponentTime(msgspec.Struct, kw_only=True):
    """One component of a layer (or of the whole model), per step."""

    name: str
    group: Group
    cpu_us: float
    device_us: float | None = None
    work_us: float | None = None
    #: Peak of the memory allocated inside the component over what was held when it began.
    peak_memory_bytes: int | None = None
    #: Share of the layer's (or the model's) time, on the attribution's time basis.
    share: float = 0.0

    def on(self, basis: str) -> float:
        """The time on ``basis`` (``device``, ``work`` or ``cpu``), µs (0 when absent)."""
        return _on(basis, self.cpu_us, self.device_us, self.work_us)

    @property
    def between_us(self) -> float | None:
        """CPU time outside ATen ops (Python, dispatch, the profiler's own), µs; ``None``
        where the op time is not kept (GPU traces)."""
        return _between(self.cpu_us, self.work_us)


def _between(cpu: float, work: float | None) -> float | None:
    return None if work is None else max(cpu - work, 0.0)


def _on(basis: str, cpu: float, device: float | None, work: float | None) -> float:
    if basis == "device":
        return device or 0.0
    if basis == "work":
        return work or 0.0
    return cpu


class LayerReport(msgspec.Struct, kw_only=True):
    """One layer: its time split into attention components and the rest."""

    name: str
    index: int
    cpu_us: float
    device_us: float | None
    peak_memory_bytes: int | None
    attention_cpu_us: float
    attention_device_us: float | None
    #: Attention's share of the layer, on the attribution's time basis.
    attention_share: float | None
    components: list[ComponentTime]
    work_us: float | None = None
    attention_work_us: float | None = None
    #: The attention component that took longest.
    top_component: str | None
    #: Kernels per step launched inside the attention core(s) (CPU traces: compute ops).
    core_kernels: float
    core_kernel_names: list[str] = msgspec.field(default_factory=list)
    attention_modules: list[str] = msgspec.field(default_factory=list)
    #: The implementation asked for, and what the trace shows ran (e.g. ``sdpa (math)``).
    requested: str | None = None
    actual: str | None = None
    #: Whether ``actual`` is what ``requested`` runs (None: nothing to compare, e.g. a
    #: plain module run as built); False is the ``attention-fallback`` finding.
    as_requested: bool | None = None
    #: How the core was found: ``label`` (the attention function's call was labelled) or
    #: ``inferred`` (no labelled call: the module's time outside its projections).
    core_source: str = "label"
    #: Backward time (training steps), from the ops autograd ran for this layer's forward.
    backward_cpu_us: float | None = None
    #: Attention by kind (``self_attention``, ``cross_attention``): the kinds it has.
    kinds: list[ComponentTime] = msgspec.field(default_factory=list)

    def total_on(self, basis: str) -> float:
        """The layer's time on ``basis``, µs."""
        return _on(basis, self.cpu_us, self.device_us, self.work_us)

    def attention_on(self, basis: str) -> float:
        """The layer's attention time on ``basis``, µs."""
        return _on(basis, self.attention_cpu_us, self.attention_device_us,
                   self.attention_work_us)

    @property
    def attention_between_us(self) -> float | None:
        """Attention's CPU time outside ATen ops (Python, dispatch, the profiler's own),
        µs; ``None`` where the op time is not kept (GPU traces)."""
        return _between(self.attention_cpu_us, self.attention_work_us)


class ModelAttribution(msgspec.Struct, kw_only=True):
    """Per-layer attribution of one step region of a model trace."""

    region: str
    steps: int
    #: ``device`` when the trace has device events, else ``cpu`` (wall time): which time
    #: shares use (``work``, the op time, in records written before shares were of the
    #: wall time).
    time_basis: Literal["cpu", "work", "device"]
    #: Kernels (``kernels``) or compute ops on a CPU trace (``cpu-ops``) in core counts.
    kernel_source: str
    total_cpu_us: float
    total_device_us: float | None
    attention_cpu_us: float
    attention_device_us: float | None
    attention_share: float | None
    core_share: float | None
    total_work_us: float | None = None
    attention_work_us: float | None = None
    #: The model outside its layers and the layers together, per step: ``layers``,
    #: ``embedding``, ``position``, ``head``, ``unattributed`` ...
    parts: list[ComponentTime] = msgspec.field(default_factory=list)
    layers: list[LayerReport] = msgspec.field(default_factory=list)
    #: Training steps: backward ops are attributed to the forward labels they came from.
    backward_attributed: bool = False
    requested: str | None = None
    #: The trace rules run per layer, each reported once with the layers it fires in
    #: (``data["layers"]``), and a mismatch of requested and actual implementation.
    findings: list[Finding] = msgspec.field(default_factory=list)
    #: Median over the traced steps of the fraction of a step's wall time the process's
    #: threads waited for a CPU (:mod:`attnprof.measure.contention`): other processes'
    #: load while the trace was taken. ``None`` when the trace does not say (traces not
    #: captured by attnprof, or a platform that does not count it).
    cpu_wait: float | None = None
    #: Median bytes of pages each traced step faulted beyond what an untraced step faults
    #: (the profiler's own allocations pushing large tensors onto fresh pages); ``None``
    #: when the trace does not say.
    extra_fault_bytes: float | None = None
    #: Each traced step's attention share; the figures are those of the median one.
    step_attention_shares: list[float] = msgspec.field(default_factory=list)
    #: Which traced step (0-based) the figures are those of.
    step: int = 0
    #: Attention over all layers by kind (``self_attention``, ``cross_attention``), with
    #: their shares of the step.
    kinds: list[ComponentTime] = msgspec.field(default_factory=list)
    #: Why the shares cannot be trusted (a contended or faulting capture, traced steps
    #: that disagree); ``None`` when nothing says so.
    unreliable: str | None = None
    #: The attention time of the region (the attention core, forward + backward, per
    #: step: :mod:`attnprof.analysis.passes.attention_time`): the figure ``analyze``,
    #: ``diff`` and the ranks view report for the same trace. ``attention_share`` above is
    #: the attention *modules'* share (projections included) on ``time_basis``.
    attention_time: AttentionTime | None = None

    def step_on(self, basis: str) -> float:
        """The step's time on ``basis``, µs: what the shares are of."""
        return _on(basis, self.total_cpu_us, self.total_device_us, self.total_work_us)

    def attention_components(self) -> dict[str, float]:
        """Each attention component's time summed over the layers, µs on ``time_basis``,
        in the order components first appear."""
        totals: dict[str, float] = {}
        for layer in self.layers:
            for c in layer.components:
                if c.group == "attention":
                    totals[c.name] = totals.get(c.name, 0.0) + c.on(self.time_basis)
        return totals
