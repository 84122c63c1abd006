"""The model record (kind ``model``): how much of a model is attention, per layer and per
component, in each phase and under each attention implementation.

One :class:`ModelRecord` per ``attnprof model`` run / :func:`attnprof.profile_model` call:
what the model is (:class:`ModelInfo`), which modules were taken as attention and why
(:class:`AttentionModule`), and one :class:`PhaseRun` per (implementation, phase) — its
latency, memory, accuracy against the reference implementation, the KV cache in decode,
and the per-layer attribution read from its trace.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from attnprof.noise import differ, relative_iqr
from attnprof.record.base import Listing, RecordBase
from attnprof.record.compare import Bytes, Latency, Status
from attnprof.record.environment import Environment
from attnprof.record.model_attribution import (
    ATTENTION_COMPONENTS,
    ATTENTION_KINDS,
    REST_COMPONENTS,
    ModelAttribution,
)
from attnprof.record.price import Price
from attnprof.workload.model_spec import ModelSpec
from attnprof.workload.settings import CpuAllocator, TimingPlan

__all__ = ["AttentionCall", "AttentionModule", "CrossCacheReport", "KvCacheReport",
           "LayerDelta", "ModelInfo", "ModelRecord", "ModelSettings", "PhaseRun", "Versus"]

ModelFamily = Literal["decoder", "encoder", "encoder-decoder", "module"]


class ModelInfo(msgspec.Struct, kw_only=True):
    """What was profiled: where it came from, its architecture and sizes."""

    source: str
    architecture: str
    family: ModelFamily
    parameters: int
    weights: Literal["random", "loaded", "factory"]
    dtype: str
    device: str
    batch: int | None = None
    seq: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    #: ``config._attn_implementation`` as the model was built (transformers models).
    default_implementation: str | None = None
    #: The first input's shape when it has no sequence axis attnprof can tell (a 4-D
    #: factory input): ``seq`` is then unknown, and so are tokens/s.
    input_shape: list[int] | None = None
    #: The most positions the config allows (``None``: no limit), and where that is said
    #: or why there is none (``relative position buckets: any length runs``).
    max_positions: int | None = None
    positions: str | None = None


class AttentionModule(msgspec.Struct, kw_only=True):
    """A module attnprof took as attention, and how it recognised it."""

    path: str
    cls: str
    recognised_by: str
    layer: str | None
    #: Labelled parts found inside it: projections, position encoding, core call.
    parts: list[str] = msgspec.field(default_factory=list)
    #: ``self``, or ``cross`` when its keys and values come from another sequence (a
    #: decoder block's attention over the encoder's output).
    kind: str = "self"


class CrossCacheReport(msgspec.Struct, kw_only=True):
    """Encoder-decoders in decode: the cross-attention cache, the encoder output's keys and
    values in every decoder layer — made once per sequence, read by every step, and as
    large again as a self-attention cache of the encoder's length."""

    #: Encoder tokens the cache holds keys and values for.
    encoder_len: int
    #: decoder layers × 2 × kv_heads × head_dim × dtype bytes (per encoder token).
    computed_bytes_per_token: int | None
    computed_bytes_per_token_per_layer: int | None
    formula: str
    #: ``encoder_len`` × the above (per sequence).
    computed_bytes: int | None
    #: Bytes the cache object's cross-attention keys and values held, per sequence.
    measured_bytes: int | None
    #: Their growth per new token (0: the cross cache does not grow).
    measured_bytes_per_token: float | None


class KvCacheReport(msgspec.Struct, kw_only=True):
    """Decode: the KV cache computed from the config beside what the cache object held —
    self-attention's (these fields) and, in an encoder-decoder, cross-attention's."""

    cache_len: int
    new_tokens: int
    #: What one more token adds to the self-attention cache (an encoder-decoder's
    #: decoder layers), per sequence: layers × 2 × kv_heads × head_dim × dtype bytes, less
    #: the sliding-window layers already full (averaged over ``new_tokens`` tokens).
    computed_bytes_per_token: float | None
    computed_bytes_per_token_per_layer: int | None
    formula: str
    #: Growth of the cache's key/value tensors over ``new_tokens`` tokens, per token.
    measured_bytes_per_token: float | None
    #: Bytes the self-attention cache held after the prompt (``cache_len`` tokens).
    measured_cache_bytes: int | None
    cross: CrossCacheReport | None = None
    #: What the config says the self-attention cache holds after the prompt: a
    #: sliding-window layer keeps at most window − 1 tokens.
    computed_cache_bytes: int | None = None
    #: Layers whose cache a sliding window bounds, and the window.
    window_layers: int = 0
    window: int | None = None

    @property
    def measured_total_bytes(self) -> int | None:
        """Bytes both caches held, per sequence (the self-attention one alone when there is
        no cross-attention)."""
        if self.measured_cache_bytes is None:
            return None
        cross = self.cross.measured_bytes if self.cross is not None else 0
        return self.measured_cache_bytes + (cross or 0)


class AttentionCall(msgspec.Struct, kw_only=True):
    """One attention module's call in a step, read from the call itself: its lengths, the
    sliding window its config gives it, what its mask admitted, and its core FLOPs."""

    module: str
    layer: str | None
    q_len: int
    #: Keys of the sequence (a decode step's cache and its token; the encoder's for cross).
    k_len: int
    cross: bool
    #: ``None``: the call did not say (its pairs are then counted as full, and its FLOPs
    #: are not counted).
    causal: bool | None
    window: int | None = None
    #: (query, key) pairs the mask admitted (batch element 0, head 0) and the most keys
    #: one query admitted; ``None`` when the call was passed no mask to read.
    admitted_pairs: int | None = None
    widest: int | None = None
    #: Pairs counted exactly without and with the window, and the share the window
    #: removed (``None``: no window).
    full_pairs: int
    window_pairs: int
    window_saves: float | None = None
    #: True: the mask admitted at most ``window`` keys per query; False: more (the
    #: window declared was not applied); None: no window, or no mask to read.
    window_applied: bool | None = None
    #: Core FLOPs of the call per step under :data:`attnprof.workload.costs.FLOPS_CONVENTION`
    #: (a window counts the pairs it admits); ``None`` when the heads are not known.
    flops: float | None = None


#: How a run's step time compares with the fastest implementation's in its phase:
#: ``fastest``; ``tie`` (the difference is inside the noise); ``slower`` (beyond it).
Verdict = Literal["fastest", "tie", "slower"]


class Versus(msgspec.Struct, kw_only=True):
    """A run against the fastest implementation of its phase, both timed in the same
    interleaved rounds (:mod:`attnprof.run.model_ranks` says how it is decided)."""

    fastest: str
    verdict: Verdict
    #: 1 for the fastest and every run tied with it, else the place by median.
    rank: int
    #: This run's median over the fastest's.
    ratio: float
    #: The test's two-sided p-value against the fastest (``None`` for the fastest itself).
    p_value: float | None = None
    #: The relative difference of the medians inside which they tie whatever the test
    #: says (5%, or the samples' relative spread when larger).
    margin: float | None = None
    #: Interleaved rounds each side was timed in.
    rounds: int = 0


class PhaseRun(msgspec.Struct, kw_only=True):
    """One phase under one attention implementation."""

    implementation: str
    phase: str
    status: Status
    reason: str = ""
    #: Per step (a step is one forward in prefill, one token in decode, forward+backward in
    #: train), timed without attnprof's labels installed.
    latency_ms: Latency | None = None
    tokens_per_step: int | None = None
    tokens_per_s: float | None = None
    #: The same step timed with the labels installed (profiler off), and its cost: the
    #: median over the interleaved rounds of each round's labelled median over its bare
    #: median, less 1, and the lowest and highest of those (its spread: a cost inside a
    #: spread that holds 0 is not told from noise).
    instrumented_ms: float | None = None
    instrumentation_overhead: float | None = None
    instrumentation_overhead_range: list[float] | None = None
    peak_memory_bytes: Bytes | None = None
    peak_memory_method: str | None = None
    attention_share: float | None = None
    core_share: float | None = None
    #: Why the shares cannot be trusted (the attribution's ``unreliable``: every capture
    #: contended or faulting, traced steps that disagree); ``None`` when nothing says so.
    shares_unreliable: str | None = None
    sdpa_backend: str | None = None
    #: max |out − reference| / max(1, max |reference|) against ``reference`` on the same
    #: weights and inputs.
    max_abs_diff: float | None = None
    reference: str | None = None
    tolerance: float | None = None
    within_tolerance: bool | None = None
    kv_cache: KvCacheReport | None = None
    trace: str | None = None
    attribution: ModelAttribution | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    #: Every attention call of one step, in order (:class:`AttentionCall`), and their
    #: core FLOPs per step summed, under ``flops_convention``.
    calls: list[AttentionCall] = msgspec.field(default_factory=list)
    core_flops: float | None = None
    flops_convention: str | None = None
    #: The median of each timing round's samples (labels off), the rounds interleaved with
    #: the other implementations' of the phase; ``None`` when it was timed alone.
    round_medians_ms: list[float] | None = None
    #: This run against the phase's fastest implementation (``None``: timed alone).
    versus: Versus | None = None

    @property
    def attention_time_share(self) -> float | None:
        """The attention time's share of the step (the core, forward + backward: the figure
        ``analyze`` reports for the run's trace); records from before it was kept: the
        core share."""
        att = self.attribution
        if att is not None and att.attention_time is not None:
            return att.attention_time.share
        return self.core_share


class LayerDelta(msgspec.Struct, kw_only=True):
    """One layer's attention time under an implementation against the reference one."""

    phase: str
    layer: str
    implementation: str
    reference: str
    attention_us: float
    reference_attention_us: float
    delta_us: float
    ratio: float | None


class ModelSettings(msgspec.Struct, frozen=True, kw_only=True):
    """How the run measured."""

    plan: TimingPlan = msgspec.field(default_factory=TimingPlan)
    seed: int = 0
    trace_steps: int = 3
    trace_dir: str | None = None
    #: The C allocator's state on CPU (see :mod:`attnprof.measure.allocator`): with
    #: ``reuse`` an eager core's score matrix reuses freed memory instead of paying
    #: first-touch page faults that land in whichever op allocates next.
    cpu_allocator: CpuAllocator = "reuse"
    #: Intra-op threads the model runs on while measured (``--threads``; ``None``: as torch
    #: found them, as every record before the setting); see :mod:`attnprof.measure.threads`.
    threads: int | None = None


_MODEL_RUN = ("implementation", "phase", "status", "median_ms", "tokens_per_s",
              "peak_memory_bytes", "attention_share", "core_share", "sdpa_backend",
              "shares_unreliable", "max_abs_diff", "within_tolerance",
              "instrumentation_overhead", "instrumentation_overhead_low",
              "instrumentation_overhead_high", "reason")
_MODEL_LAYER = ("layer", "layer_index", "time_basis", "layer_cpu_us", "layer_device_us",
                "layer_work_us", "layer_attention_cpu_us", "layer_attention_device_us",
                "layer_attention_work_us", "layer_attention_share",
                *(f"layer_{k}_us" for k in ATTENTION_KINDS),
                "top_component", "core_kernels", "actual", "layer_peak_memory_bytes")
#: The model header: the run, the layer, each component's time on the attribution's basis
#: (device, or CPU wall time), its CPU wall time and its time inside ATen ops (CPU traces;
#: µs per step), then the model and the machine.
MODEL_COLUMNS: tuple[str, ...] = (
    *_MODEL_RUN, *_MODEL_LAYER,
    *(f"{c}_us" for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS)),
    *(f"{c}_cpu_us" for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS)),
    *(f"{c}_work_us" for c in (*ATTENTION_COMPONENTS, *REST_COMPONENTS)),
    "model", "architecture", "dtype", "device", "batch", "seq", "device_name", "torch",
    "created")


class ModelRecord(RecordBase, tag="model"):
    """A model profiled: attention's share per layer, component, phase and implementation."""

    environment: Environment
    spec: ModelSpec
    model: ModelInfo
    settings: ModelSettings
    attention: list[AttentionModule] = msgspec.field(default_factory=list)
    runs: list[PhaseRun] = msgspec.field(default_factory=list)
    deltas: list[LayerDelta] = msgspec.field(default_factory=list)
    #: The machine's price the runs' costs are read at (``--price``, a prices file).
    price: Price | None = None

    def run(self, implementation: str, phase: str) -> PhaseRun:
        """The run of ``implementation`` in ``phase`` (``KeyError`` if it was not run)."""
        for r in self.runs:
            if r.implementation == implementation and r.phase == phase:
                return r
        raise KeyError((implementation, phase))

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per layer of each run."""
        return MODEL_COLUMNS, model_lines(self)

    def headline(self) -> str:
        """Per phase: the fastest implementation (the ones tied with it named as ties)
        and attention's share of its step."""
        return model_headline(self)

    def subject(self) -> str:
        """The model and its input."""
        m = self.model
        shape = f" batch {m.batch} × seq {m.seq}" if m.batch and m.seq else ""
        return f"{m.source} ({m.architecture}, {m.dtype} {m.device}){shape}"

    def listing(self) -> Listing:
        """The model, its size and the phases run; the implementations."""
        m = self.model
        phases = ",".join(dict.fromkeys(r.phase for r in self.runs))
        return Listing(summary=f"{m.source} ({m.architecture}, {m.layers} layers) "
                               f"{m.dtype} {m.device} {phases}",
                       names=tuple(dict.fromkeys(r.implementation for r in self.runs)),
                       model=m.source)


def _fastest_runs(runs: list[PhaseRun]) -> tuple[list[PhaseRun], list[PhaseRun]]:
    """A phase's runs tied for fastest and the slower ones: by each run's verdict against
    the fastest from the interleaved rounds, or, where a run has none (an older record),
    by the medians and their spreads (:func:`attnprof.noise.differ`)."""
    if all(r.versus is not None for r in runs) or len(runs) == 1:
        best = [r for r in runs if r.versus is None or r.versus.verdict != "slower"]
        return best, sorted((r for r in runs if r not in best),
                            key=lambda r: r.versus.ratio if r.versus else 0.0)
    timed = sorted((r for r in runs if r.latency_ms and r.latency_ms.median > 0),
                   key=lambda r: r.latency_ms.median if r.latency_ms else 0.0)
    if not timed:
        return runs, []

    def spread(r: PhaseRun) -> float:
        assert r.latency_ms is not None
        return relative_iqr(r.latency_ms.median, r.latency_ms.iqr)

    first = timed[0]
    assert first.latency_ms is not None
    best = [r for r in timed if r is first or not differ(
        first.latency_ms.median, r.latency_ms.median,  # type: ignore[union-attr]
        spread(first), spread(r))]
    return best, [r for r in timed if r not in best]


def model_headline(record: ModelRecord) -> str:
    """See :meth:`ModelRecord.headline`."""
    said = []
    phases = list(dict.fromkeys(r.phase for r in record.runs))
    for phase in phases:
        runs = [r for r in record.runs if r.phase == phase and r.status == "ok"]
        if not runs:
            said.append(f"{phase}: no implementation ran cleanly.")
            continue
        best, slower = _fastest_runs(runs)
        names = [r.implementation for r in best]
        lead = (f"{names[0]} is fastest" if len(best) == 1 and slower else
                f"{names[0]} is the only implementation measured" if len(best) == 1 else
                f"{', '.join(names[:-1])} and {names[-1]} tie within noise")
        if slower:
            worst, ratio = slower[-1], None
            if worst.versus is not None:  # the rounds' ratio, else the medians'
                ratio = worst.versus.ratio
            elif worst.latency_ms and best[0].latency_ms:
                ratio = worst.latency_ms.median / best[0].latency_ms.median
            if ratio is not None:
                lead += f" ({worst.implementation} {ratio:.2g}× slower)"
        share = best[0].attention_share
        said.append(f"{phase}: {lead}; attention is "
                    + (f"{share:.0%} of {best[0].implementation}'s step." if share is not None
                       else "not measured as a share of the step."))
    return " ".join(said) or "No run of the model was measured."


def model_lines(record: ModelRecord) -> list[dict[str, Any]]:
    """A model run: one line per layer of each run (one line for a run that did not
    measure), the run's figures repeated on each."""
    m = record.model
    shared = {"model": m.source, "architecture": m.architecture, "dtype": m.dtype,
              "device": m.device, "batch": m.batch, "seq": m.seq,
              "device_name": record.environment.device_name,
              "torch": record.environment.torch, "created": record.created}
    lines: list[dict[str, Any]] = []
    for run in record.runs:
        base: dict[str, Any] = {k: getattr(run, k) for k in _MODEL_RUN if hasattr(run, k)}
        base["median_ms"] = run.latency_ms.median if run.latency_ms else None
        low, high = run.instrumentation_overhead_range or (None, None)
        base.update(instrumentation_overhead_low=low, instrumentation_overhead_high=high)
        att = run.attribution
        if att is None or not att.layers:
            lines.append({**base, **shared})
            continue
        for layer in att.layers:
            line = {**base, **shared, "layer": layer.name, "layer_index": layer.index,
                    "time_basis": att.time_basis, "layer_cpu_us": layer.cpu_us,
                    "layer_device_us": layer.device_us, "layer_work_us": layer.work_us,
                    "layer_attention_cpu_us": layer.attention_cpu_us,
                    "layer_attention_device_us": layer.attention_device_us,
                    "layer_attention_work_us": layer.attention_work_us,
                    "layer_attention_share": layer.attention_share,
                    "top_component": layer.top_component, "core_kernels": layer.core_kernels,
                    "actual": layer.actual, "layer_peak_memory_bytes": layer.peak_memory_bytes}
            line.update({f"layer_{k.name}_us": k.on(att.time_basis) for k in layer.kinds})
            line.update({f"{c.name}_cpu_us": c.cpu_us for c in layer.components})
            line.update({f"{c.name}_work_us": c.work_us for c in layer.components})
            line.update({f"{c.name}_us": c.on(att.time_basis) for c in layer.components})
            lines.append(line)
    return lines
