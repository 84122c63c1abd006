"""Where a model's time goes, layer by layer: the attribution of one model trace.

:class:`ModelAttribution` is what :mod:`attnprof.analysis.attribution` reads out of a trace
whose steps carry attnprof's model labels (:mod:`attnprof.knowledge.annotations`). It is
part of the trace report (``TraceReport.model``), so ``attnprof analyze`` of a model trace
shows it too, and of every model run (``PhaseRun.attribution``).

Units as in the trace report: times in µs per step (``*_us``), bytes in ``*_bytes``; each
component's time is its median over the traced steps (a layer's and the model's totals are
the sums of those), so one step slowed by another process does not skew a component.
``cpu_us`` is the wall time the CPU spent inside a label; ``device_us`` the summed duration
of the device events launched inside it (``None`` on a CPU-only trace); ``work_us``, on a
CPU-only trace, the time spent inside ATen ops within it (the outermost ones, so nothing
counts twice). Shares use the device time on a GPU trace and the op time on a CPU trace —
the time spent computing, without the Python, dispatch and profiler time between ops, which
the profiler inflates (wall time inside a label includes it, and attention has many small
ops). Components of a layer and its
``unattributed`` rest sum to the layer on every basis.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from attnprof.record.finding import Finding

__all__ = ["ATTENTION_COMPONENTS", "REST_COMPONENTS", "ComponentTime", "LayerReport",
           "ModelAttribution"]

#: Components of attention, in the order a forward runs them. ``attention_other``: time in
#: the attention module outside every labelled part (reshapes, transposes, copies).
ATTENTION_COMPONENTS: tuple[str, ...] = (
    "q_proj", "k_proj", "v_proj", "qkv_proj", "position", "kv_cache", "core", "o_proj",
    "attention_other",
)
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

    def total_on(self, basis: str) -> float:
        """The layer's time on ``basis``, µs."""
        return _on(basis, self.cpu_us, self.device_us, self.work_us)

    def attention_on(self, basis: str) -> float:
        """The layer's attention time on ``basis``, µs."""
        return _on(basis, self.attention_cpu_us, self.attention_device_us,
                   self.attention_work_us)


class ModelAttribution(msgspec.Struct, kw_only=True):
    """Per-layer attribution of one step region of a model trace."""

    region: str
    steps: int
    #: ``device`` when the trace has device events, else ``work`` (compute ops on the
    #: CPU): which time shares use.
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

    def attention_components(self) -> dict[str, float]:
        """Each attention component's time summed over the layers, µs on ``time_basis``,
        in the order components first appear."""
        totals: dict[str, float] = {}
        for layer in self.layers:
            for c in layer.components:
                if c.group == "attention":
                    totals[c.name] = totals.get(c.name, 0.0) + c.on(self.time_basis)
        return totals
