"""The trace report: what the analysis of one trace found, as plain versioned data.

:class:`TraceReport` is the single result of analysing a trace (``attnprof analyze``,
``attnprof profile``): per-region statistics (:class:`RegionReport`), the global kernel
breakdown and the findings. It is made of ``msgspec.Struct`` so it encodes to JSON fast,
embeds in the run record (``VariantResult.analysis``), and decodes with validation.
Renderers and the expectations checker read only this; nothing here computes.

Units: every time is in microseconds and named ``*_us``; bytes are named ``*_bytes``.
``per_forward`` is a count divided by the region's ``instances`` (forwards/steps captured).
``None`` means "the trace does not say" (e.g. device time on a CPU-only trace), never zero.
Bump :data:`REPORT_SCHEMA_VERSION` on any incompatible change of a report (the record that
holds it has its own version, :data:`attnprof.record.base.SCHEMA_VERSION`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from attnprof.record.attention_time import AttentionTime
from attnprof.record.finding import Finding, Severity
from attnprof.record.model_attribution import ModelAttribution

__all__ = [
    "PATH_SEP",
    "PHASES",
    "REPORT_SCHEMA_VERSION",
    "BreakdownCategory",
    "BreakdownKernel",
    "BreakdownReport",
    "Finding",
    "Gap",
    "KernelStat",
    "OpNode",
    "OpStat",
    "PhaseTime",
    "RegionReport",
    "Severity",
    "Timeline",
    "TimelineEvent",
    "TraceContention",
    "TraceReport",
    "Verdict",
]

REPORT_SCHEMA_VERSION = 1

#: How a call path joins the CPU ops from the region down to a kernel's launcher.
PATH_SEP = " › "

#: ``cpu-bound``: the CPU dispatch of a forward takes longer than its device busy time;
#: ``cpu-only``: no device work (a CPU trace); ``unknown``: a GPU trace that recorded no
#: device activity (e.g. CUPTI activity tracing off), so nothing can be compared.
Verdict = Literal["cpu-bound", "device-bound", "cpu-only", "unknown"]


class KernelStat(msgspec.Struct, kw_only=True):
    """One kernel name (or, on CPU-only traces, one compute op) within a region.

    Launch properties (``grid`` ... ``occupancy``) are those of the first launch seen when
    all launches agree, else ``None``; ``note`` says why one is absent when that matters
    (CUPTI does not report occupancy for ``cuLaunchKernelEx`` launches, e.g. cuDNN's).
    """

    name: str
    short: str
    family: str
    count: int
    per_forward: float
    total_us: float
    mean_us: float
    share: float  # of the region's kernel time, 0..1
    launched_by: str | None = None  # the CPU op that launched it (CPU: the op that called it)
    call_path: str | None = None  # CPU ops from the region down to ``launched_by``, " › "-joined
    tensor_cores: bool | None = None
    dtype: str | None = None
    #: Where ``dtype`` comes from: "name" (the kernel name states it), "launching op" (the
    #: recorded input types of the op that launched it), or None (unknown).
    dtype_source: str | None = None
    grid: list[int] | None = None
    block: list[int] | None = None
    registers_per_thread: int | None = None
    shared_memory: int | None = None  # bytes per block
    #: CUPTI "est. achieved occupancy %", 0..100; ``None`` also where the trace wrote a 0
    #: that is no estimate (``note`` says why).
    occupancy: float | None = None
    #: Computed from block size, registers, shared memory and the architecture's per-SM
    #: limits (:mod:`attnprof.knowledge.sm_limits`), 0..100; not a measurement.
    theoretical_occupancy: float | None = None
    #: What limits ``theoretical_occupancy``: registers, shared memory, warps or blocks.
    occupancy_limited_by: str | None = None

    def occupancy_text(self) -> str:
        """CUPTI's occupancy as the views show it: whole percents, where 0 means under 1%
        (CUPTI truncates), "—" where it made no estimate."""
        if self.occupancy is None:
            return "—"
        return "<1%" if self.occupancy == 0 else f"{self.occupancy:g}%"

    def theoretical_text(self) -> str | None:
        """The theoretical occupancy and its limit (``None`` when not computed)."""
        if self.theoretical_occupancy is None:
            return None
        return f"{self.theoretical_occupancy:.3g}% ({self.occupancy_limited_by})"
    launch_api: str | None = None  # cudaLaunchKernel, cuLaunchKernelEx, hipLaunchKernel, ...
    note: str | None = None
    tile: str | None = None
    arch: str | None = None
    category: str = "compute"  # compute | memcpy | memset | communication | cpu-op


class OpStat(msgspec.Struct, kw_only=True):
    """One CPU op name within a region, flat (all nesting levels counted)."""

    name: str
    count: int
    per_forward: float
    self_us: float
    total_us: float


class OpNode(msgspec.Struct, kw_only=True):
    """A node of the region's CPU op tree, aggregated over instances by call path."""

    name: str
    per_forward: float
    total_us: float
    self_us: float
    children: list[OpNode] = msgspec.field(default_factory=list)


class Gap(msgspec.Struct, kw_only=True):
    """An idle stretch of the device timeline inside one step (µs from the trace origin)."""

    start_us: float
    dur_us: float
    after: str | None = None  # the kernel that ran just before the gap


#: The phases of a training step, in the order a step runs them (``other``: what no
#: phase claims, e.g. the loop's own code between optimizer step and the next batch).
PHASES = ("data", "forward", "loss", "backward", "optimizer", "other")


class PhaseTime(msgspec.Struct, kw_only=True):
    """One phase of a training step (:data:`PHASES`), per step.

    ``us`` is wall time on the step's timeline (the phases of a step add up to its
    duration); ``work_us`` and ``attention_us`` are work (device time on a GPU trace,
    compute ops' work time on a CPU one) as the region's attention share counts it.
    """

    name: str
    us: float
    share: float  # of the step's wall time, 0..1
    work_us: float = 0.0
    attention_us: float = 0.0
    #: Attention's share of the phase's work (None: the phase did no work).
    attention_share: float | None = None


class RegionReport(msgspec.Struct, kw_only=True):
    """One region name (``attnprof::<variant>``, ``ProfilerStep#``, or the whole trace)."""

    name: str
    instances: int
    kernels_per_forward: float
    kernels: list[KernelStat]
    ops: list[OpStat]
    tree: list[OpNode]
    cpu_us_per_forward: float
    device_us_per_forward: float | None
    verdict: str  # one of Verdict
    categories_us: dict[str, float]  # per forward: compute, memcpy, memset, communication, idle
    idle_us: float | None  # per forward, device idle inside the steps
    gaps: list[Gap]
    launch_apis: dict[str, int]
    peak_memory_bytes: int | None
    largest_allocation_bytes: int | None
    largest_allocation_op: str | None
    sdpa_backend: str | None
    #: "kernels" (device events) or "cpu-ops" (compute ops on a CPU-only trace).
    kernel_source: str = "kernels"
    #: Which allocator the memory figures are from: "cuda" or "cpu" (None: no [memory] events).
    memory_device: str | None = None
    #: The attention time (:mod:`attnprof.analysis.passes.attention_time`: the attention
    #: core's work, forward + backward) per instance, µs, and its share of all the region's
    #: work (None when the region did no work); ``attention`` has the split and the ops.
    attention_us_per_forward: float = 0.0
    attention_share: float | None = None
    attention: AttentionTime | None = None
    #: A training region (its instances ran autograd's backward) is a region of *steps*,
    #: split into :data:`PHASES`; empty for forwards (inference, attnprof's own captures).
    phases: list[PhaseTime] = msgspec.field(default_factory=list)
    #: Each instance's wall duration, µs, and its attention share of work (None: no work).
    instance_us: list[float] = msgspec.field(default_factory=list)
    instance_attention_shares: list[float | None] = msgspec.field(default_factory=list)

    @property
    def is_training(self) -> bool:
        """True when the instances are training steps (they ran a backward)."""
        return bool(self.phases)

    @property
    def unit(self) -> str:
        """What one instance is called: ``step`` (training) or ``forward``."""
        return "step" if self.phases else "forward"


class BreakdownKernel(msgspec.Struct, kw_only=True):
    """One device kernel (or copy/set) name over the whole trace."""

    name: str
    short: str
    category: str
    count: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    share: float


class BreakdownCategory(msgspec.Struct, kw_only=True):
    """All device events of one category over the whole trace."""

    category: str
    count: int
    total_us: float
    share: float


class BreakdownReport(msgspec.Struct, kw_only=True):
    """The global kernel breakdown (:mod:`attnprof.analysis.passes.breakdown`): per name,
    largest total first, and per category in :data:`~attnprof.knowledge.trace_categories.
    CATEGORIES` order."""

    kernels: tuple[BreakdownKernel, ...]
    categories: tuple[BreakdownCategory, ...]
    count: int
    total_us: float

    @property
    def is_empty(self) -> bool:
        """True when the trace has no device events (e.g. a CPU-only capture)."""
        return self.count == 0

    def category(self, name: str) -> BreakdownCategory:
        """The total for one category (``KeyError`` for an unknown one)."""
        for c in self.categories:
            if c.category == name:
                return c
        raise KeyError(name)


class TimelineEvent(msgspec.Struct, kw_only=True, array_like=True):
    """One bar of a step's timeline: a CPU op or a device event, on its lane."""

    #: ``CPU thread 123`` or ``stream 7``.
    lane: str
    name: str
    #: ``op`` (a CPU op, ``depth`` deep in its thread's tree) or the device event's kind
    #: (``compute``, ``memcpy``, ``memset``, ``communication``).
    kind: str
    #: Microseconds from the start of the step.
    start_us: float
    dur_us: float
    depth: int = 0


class Timeline(msgspec.Struct, kw_only=True):
    """One profiled step, as it ran: the ops of its region instance (the outer levels of
    each thread's tree) and the device events it launched, stacked by thread and stream."""

    region: str
    #: Which instance of the region (0-based) of how many: the median-length one.
    instance: int
    instances: int
    dur_us: float
    events: list[TimelineEvent]
    #: Events the step held at the depths drawn; when more than ``events``, the shortest
    #: were left out (``events`` keeps the longest).
    total: int
    #: The deepest op level drawn (0: top level).
    max_depth: int


class TraceContention(msgspec.Struct, kw_only=True):
    """Whether a foreign trace was taken while other work held its CPUs, read from the
    trace alone (:mod:`attnprof.analysis.contended_steps`): ops far slower than their peers
    (the same op on the same shapes elsewhere in the trace), and steps that disagree."""

    #: The region whose steps were read.
    region: str
    #: Per step: wall time, µs, spent beyond their fastest peer by ops that ran far slower
    #: than their peers (an estimate of the time the step's threads waited for a CPU), and that as
    #: a fraction of the step.
    stalled_us: list[float]
    stalled_fraction: list[float]
    #: The median step's stalled fraction: the figure held to the quiet threshold.
    median_stalled_fraction: float
    #: The ops that stalled most (name, stalls, µs beyond their peers), largest first.
    stalled_ops: list[tuple[str, int, float]] = msgspec.field(default_factory=list)
    #: Whether the steps' durations, or their attention shares, disagree beyond the noise.
    steps_disagree: bool = False
    #: How the steps disagree, in words (None when they agree).
    disagreement: str | None = None
    #: Whether the trace is marked: the figures are those of a contended moment.
    marked: bool = False
    #: Why, in words (None when not marked).
    reason: str | None = None


class TraceReport(msgspec.Struct, kw_only=True):
    """Everything the analysis of one trace found; see the module doc for units."""

    schema_version: int = REPORT_SCHEMA_VERSION
    source: str
    #: The device kind as the trace says: "cpu", "cuda", "rocm", "xpu", "mtia", "hpu",
    #: "privateuse1", or "accelerator" (device work, but nothing names its kind).
    device: str
    device_names: list[str]
    rank: int | None
    world_size: int | None
    events: int
    regions: list[RegionReport]
    breakdown: BreakdownReport
    findings: list[Finding]
    #: The trace's ``attnprof`` metadata block (variant, workload, steps), when present.
    attnprof: dict[str, Any] | None = None
    #: Device events in no region: launched outside every region, or whose launch is not in
    #: the trace (e.g. launched before profiling started). Regions + these = the breakdown.
    unassigned_device_events: int = 0
    unassigned_device_us: float = 0.0
    #: How ``device`` was told (e.g. "xpu_runtime events", "runtime calls such as hipMalloc").
    device_evidence: str | None = None
    #: The device events attnprof read (kernels, copies, sets), per trace category.
    device_categories: dict[str, int] = msgspec.field(default_factory=dict)
    #: Events of categories attnprof does not model (e.g. MTIA's mtia_ccp_events), per
    #: category: the report says so, and analyses the CPU side alone.
    unmodelled_categories: dict[str, int] = msgspec.field(default_factory=dict)
    #: Per-layer attribution, when the trace carries attnprof's model labels.
    model: ModelAttribution | None = None
    #: Events counted in ``events`` that the analysis left out because they cannot be placed
    #: in time, by reason ("missing dur", "negative dur", "ts not a number", ...).
    skipped_events: dict[str, int] = msgspec.field(default_factory=dict)
    #: Entries of the trace's event list that are not events, by reason ("not an object",
    #: "no phase (ph)", "in a second traceEvents list"): not in ``events``.
    dropped_entries: dict[str, int] = msgspec.field(default_factory=dict)
    #: Values in events that could not be used (a wrong type, an int beyond int64, a byte
    #: count beyond 2**53), left out, by field ("args.Bytes", "pid", ...).
    unusable_values: dict[str, int] = msgspec.field(default_factory=dict)
    #: One profiled step of the first region, for the report's timeline (``None``: the
    #: trace has no region with work, or was analysed before timelines were kept).
    timeline: Timeline | None = None
    #: Contention read from a foreign trace itself (None: attnprof's own trace, whose
    #: capture recorded its moment, or a trace without two steps to compare).
    contention: TraceContention | None = None

    def region(self, name: str) -> RegionReport:
        """The region called ``name`` (``KeyError`` if absent)."""
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def findings_for(self, rule: str) -> list[Finding]:
        """The findings of one rule."""
        return [f for f in self.findings if f.rule == rule]

    def to_json(self) -> bytes:
        """Pretty JSON bytes (NaN/inf become null)."""
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"
