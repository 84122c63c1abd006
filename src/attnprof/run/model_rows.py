"""What a model run's rows say, built once from what was measured: latency and rates, the
KV cache computed beside measured, accuracy against the reference, per-layer deltas.

The runner (:mod:`attnprof.run.model`) only measures and calls these.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from attnprof.analysis.attribution.implementation import layer_list
from attnprof.formatting import one_line
from attnprof.knowledge.sdpa_backends import refusal_of, sdpa_backend
from attnprof.measure.accuracy import TOLERANCE
from attnprof.measure.memory import MemoryProfile
from attnprof.measure.stats import summarize
from attnprof.models.fits import position_limit
from attnprof.models.implementations import dispatch_family
from attnprof.models.loaded import LoadedModel
from attnprof.models.locate import Located
from attnprof.models.windows import CallSeen
from attnprof.record.compare import Status
from attnprof.record.model import (
    AttentionCall,
    AttentionModule,
    CrossCacheReport,
    KvCacheReport,
    LayerDelta,
    ModelInfo,
    ModelRecord,
    PhaseRun,
)
from attnprof.record.model_attribution import ModelAttribution
from attnprof.run.rows import is_oom, latency
from attnprof.workload.costs import FLOPS_CONVENTION, attended_pairs
from attnprof.workload.model_spec import SDPA_PINS
from attnprof.workload.problem import DTYPE_BYTES

if TYPE_CHECKING:
    import torch

__all__ = ["PhaseMeasurements", "attention_calls", "attention_rows", "drop_lost_reference",
           "failed_run",
           "kv_cache_report", "layer_deltas", "model_info", "not_as_requested", "phase_row",
           "relative_error"]


@dataclass
class PhaseMeasurements:
    """Everything measured of one (implementation, phase) before its row is built."""

    tokens: int
    bare_ms: list[float] = field(default_factory=list)
    labelled_ms: list[float] = field(default_factory=list)
    #: Each interleaved round's labelled median over its bare median, less 1.
    round_overheads: list[float] = field(default_factory=list)
    #: Each round's bare median, when the rounds were shared with the phase's other
    #: implementations (what they are ranked on).
    round_medians: list[float] | None = None
    memory: MemoryProfile | None = None
    kv_cache: KvCacheReport | None = None
    trace: str | None = None
    attribution: ModelAttribution | None = None
    error: float | None = None
    reference: str | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    calls: list[AttentionCall] = field(default_factory=list)


def model_info(loaded: LoadedModel, default_impl: str | None) -> ModelInfo:
    """What the model is, from its config or its parameters."""
    s = loaded.sizes
    config = getattr(loaded.model, "config", None)
    limit, positions = position_limit(config) if config is not None else (None, None)
    return ModelInfo(source=loaded.source, architecture=type(loaded.model).__name__,
                     family=loaded.family,
                     parameters=sum(p.numel() for p in loaded.model.parameters()),
                     weights=loaded.weights,  # type: ignore[arg-type]
                     dtype=loaded.dtype, device=loaded.device, batch=s.get("batch"),
                     seq=s.get("seq"), layers=s.get("layers"), hidden=s.get("hidden"),
                     heads=s.get("heads"), kv_heads=s.get("kv_heads"),
                     head_dim=s.get("head_dim"), default_implementation=default_impl,
                     input_shape=loaded.input_shape, max_positions=limit,
                     positions=positions if config is not None else None)


def attention_rows(located: Located) -> list[AttentionModule]:
    """The attention modules found, with how each was recognised."""
    return [AttentionModule(path=f.path or "(the model itself)", cls=f.cls,
                            recognised_by=f.recognised_by, layer=f.layer,
                            parts=located.parts_of(f.path), kind=f.kind)
            for f in located.attention]


def kv_cache_report(loaded: LoadedModel, cache_len: int, new_tokens: int,
                    measured: dict[str, tuple[int, int]],
                    windows: list[int | None] | None = None) -> KvCacheReport:
    """The cache computed from the config (layers × 2 × kv_heads × head_dim × dtype bytes
    per token; a sliding-window layer holds at most window − 1 tokens) beside what the
    cache object held and its growth over ``new_tokens`` tokens. ``measured`` maps
    ``self`` (and ``cross``, in an encoder-decoder) to the bytes held before and after the
    growth; ``windows``: each self-attention layer's window, as the step's calls showed."""
    s = loaded.sizes
    batch = s.get("batch") or 1
    # An encoder-decoder caches in its decoder layers, with the decoder's heads.
    layers = len(windows) if windows else (s.get("decoder_layers") or s.get("layers"))
    windows = windows or [None] * (layers or 0)
    kv = s.get("decoder_heads") or s.get("kv_heads")
    hd, elem = s.get("head_dim"), DTYPE_BYTES.get(loaded.dtype)
    per_layer = 2 * kv * hd * elem if kv and hd and elem else None
    formula = (f"{layers} layers × 2 (K,V) × {kv} kv_heads × {hd} head_dim × {elem} bytes"
               if layers and per_layer else "unknown: the config does not give kv_heads and "
               "head_dim")
    sliding = [w for w in windows if w is not None]

    def tokens_held(tokens: int) -> int:
        return sum(tokens if w is None else min(tokens, w - 1) for w in windows)

    computed_held = per_layer * tokens_held(cache_len) if per_layer and layers else None
    growth = (per_layer * (tokens_held(cache_len + new_tokens) - tokens_held(cache_len))
              / new_tokens if per_layer and layers and new_tokens > 0 else None)
    if sliding and per_layer:
        formula += (f"; {len(sliding)} sliding-window layer(s) (window {max(sliding)}) hold "
                    f"at most {max(sliding) - 1} tokens")

    def held(kind: str) -> tuple[int | None, float | None]:
        if kind not in measured:
            return None, None
        before, after = measured[kind]
        change = (after - before) / (new_tokens * batch) if new_tokens > 0 else None
        return before // batch, change

    self_held, self_growth = held("self")
    cross = None
    if loaded.family == "encoder-decoder":
        encoder_len = int(s.get("seq") or 0)
        cross_held, cross_growth = held("cross")
        full = per_layer * layers if per_layer and layers else None
        cross = CrossCacheReport(
            encoder_len=encoder_len, computed_bytes_per_token=full,
            computed_bytes_per_token_per_layer=per_layer,
            formula=f"{formula} × {encoder_len} encoder tokens" if full else formula,
            computed_bytes=full * encoder_len if full else None,
            measured_bytes=cross_held, measured_bytes_per_token=cross_growth)
    return KvCacheReport(cache_len=cache_len, new_tokens=new_tokens,
                         computed_bytes_per_token=growth,
                         computed_bytes_per_token_per_layer=per_layer, formula=formula,
                         measured_bytes_per_token=self_growth,
                         measured_cache_bytes=self_held, cross=cross,
                         computed_cache_bytes=computed_held, window_layers=len(sliding),
                         window=max(sliding) if sliding else None)


def attention_calls(seen: list[CallSeen], loaded: LoadedModel,
                    phase: str) -> list[AttentionCall]:
    """The record of each attention call a step made, with its pairs and core FLOPs under
    :data:`~attnprof.workload.costs.FLOPS_CONVENTION` (× 3.5 in a training step)."""
    s = loaded.sizes
    batch = s.get("batch") or 1
    scale = 3.5 if phase == "train" else 1.0
    out = []
    for c in seen:
        heads, head_dim = c.heads or s.get("heads"), c.head_dim or s.get("head_dim")
        # One decode query may see the whole cache; an unknown causality counts as full
        # for the pairs shown, and leaves the FLOPs uncounted.
        causal = bool(c.causal) and c.q_len > 1
        exact = _pairs(c.q_len, c.k_len, causal, c.q_len + c.k_len)
        windowed = _pairs(c.q_len, c.k_len, causal, c.window) if c.window else exact
        applied = (None if c.window is None or c.widest is None
                   else c.widest <= c.window)
        convention = attended_pairs(c.q_len, c.k_len, causal, c.window)
        out.append(AttentionCall(
            module=c.path, layer=c.layer, q_len=c.q_len, k_len=c.k_len, cross=c.cross,
            causal=causal if c.causal is not None else None, window=c.window,
            admitted_pairs=c.admitted, widest=c.widest, full_pairs=exact, window_pairs=windowed,
            window_saves=1 - windowed / exact if c.window and exact else None,
            window_applied=applied,
            flops=scale * 4.0 * batch * heads * convention * head_dim
            if heads and head_dim and c.causal is not None else None))
    return out


@functools.lru_cache(maxsize=256)
def _pairs(q_len: int, k_len: int, causal: bool, window: int | None) -> int:
    """Pairs counted exactly (every layer of a step asks the same)."""
    return int(attended_pairs(q_len, k_len, causal, window))


def relative_error(out: torch.Tensor, reference: torch.Tensor) -> float | None:
    """max |out − reference| / max(1, max |reference|), in float64: NaN when ``out`` holds
    a NaN or an infinity, ``None`` when the reference does (nothing to compare against)."""
    import torch

    ref = reference.detach().to(torch.float64)
    if not bool(torch.isfinite(ref).all()):
        return None
    values = out.detach().to(torch.float64)
    if not bool(torch.isfinite(values).all()):
        return float("nan")
    return float((values - ref).abs().max()) / max(1.0, float(ref.abs().max()))


def phase_row(implementation: str, phase: str, m: PhaseMeasurements,
              dtype: str) -> PhaseRun:
    """The row of a measured phase."""
    stats = summarize(m.bare_ms)
    labelled = summarize(m.labelled_ms).median if m.labelled_ms else None
    overhead = labelled / stats.median - 1.0 if labelled and stats.median > 0 else None
    if m.round_overheads:  # paired within each round: what drifts between rounds cancels
        overhead = statistics.median(m.round_overheads)
    att = m.attribution
    tol = TOLERANCE.get(dtype) if m.error is not None else None
    status, reason = _accuracy(m.error, tol, m.reference, dtype)
    return PhaseRun(
        implementation=implementation, phase=phase, status=status, reason=reason,
        latency_ms=latency(stats, m.bare_ms),
        tokens_per_step=m.tokens or None,
        tokens_per_s=m.tokens / (stats.median / 1e3) if stats.median > 0 and m.tokens
        else None,
        instrumented_ms=labelled, instrumentation_overhead=overhead,
        instrumentation_overhead_range=([min(m.round_overheads), max(m.round_overheads)]
                                        if m.round_overheads else None),
        peak_memory_bytes=m.memory.peak_bytes if m.memory else None,
        peak_memory_method=m.memory.method if m.memory else None,
        attention_share=att.attention_share if att else None,
        core_share=att.core_share if att else None,
        shares_unreliable=att.unreliable if att else None,
        sdpa_backend=sdpa_backend(m.memory.op_names) if m.memory else None,
        max_abs_diff=m.error if m.error is not None and math.isfinite(m.error) else None,
        reference=m.reference, tolerance=tol,
        within_tolerance=status == "ok" if m.error is not None and tol is not None else None,
        kv_cache=m.kv_cache, trace=m.trace, attribution=att, warnings=m.warnings,
        notes=[*m.notes, *_window_notes(m.calls)], calls=m.calls,
        core_flops=(math.fsum(c.flops for c in m.calls if c.flops is not None)
                    if m.calls and all(c.flops is not None for c in m.calls) else None),
        flops_convention=FLOPS_CONVENTION if m.calls else None,
        round_medians_ms=m.round_medians)


def _accuracy(error: float | None, tolerance: float | None, reference: str | None,
              dtype: str) -> tuple[Status, str]:
    """``ok``, or ``wrong`` and why: the output differs from the reference implementation's
    by more than the dtype's tolerance, or holds NaN or ±Inf where it has none."""
    if error is None or tolerance is None or error <= tolerance:
        return "ok", ""
    if not math.isfinite(error):
        return "wrong", (f"its output holds NaN or infinite values where {reference}'s has "
                         "none")
    return "wrong", (f"its output is off {reference}'s by up to {error:.3g} (relative to the "
                     f"largest value), past {dtype}'s tolerance of {tolerance:.0e}")


def _window_notes(calls: list[AttentionCall]) -> list[str]:
    """A note when a declared window was not applied: the row must not read as if it was."""
    missed = [c.layer or c.module for c in calls if c.window_applied is False]
    if not missed:
        return []
    window = next(c.window for c in calls if c.window_applied is False)
    return [f"sliding window {window} declared but the mask admitted more keys per query "
            f"in {layer_list(list(dict.fromkeys(missed)), keep=3)}: not applied"]


def failed_run(implementation: str, phase: str, exc: BaseException, warnings: list[str],
               device_type: str) -> PhaseRun:
    """The row of a phase that raised: ``unsupported`` for a refusal, classified as every
    command classifies it (:func:`attnprof.knowledge.sdpa_backends.refusal_of`), else
    ``oom`` or ``error`` with the message."""
    refusal = refusal_of(exc, warnings, SDPA_PINS.get(implementation), device_type)
    if refusal is not None:
        return PhaseRun(implementation=implementation, phase=phase, status="unsupported",
                        reason=refusal, warnings=warnings)
    return PhaseRun(implementation=implementation, phase=phase,
                    status="oom" if is_oom(exc) else "error",
                    reason=f"{type(exc).__name__}: {one_line(str(exc))}", warnings=warnings)


def layer_deltas(runs: list[PhaseRun], reference: str) -> list[LayerDelta]:
    """Each implementation's per-layer attention time against ``reference``'s, per phase."""
    out: list[LayerDelta] = []
    by_phase: dict[str, dict[str, PhaseRun]] = {}
    for r in runs:
        if r.status == "ok" and r.attribution is not None:
            by_phase.setdefault(r.phase, {})[r.implementation] = r
    for phase, runs_of in by_phase.items():
        ref = runs_of.get(reference)
        if ref is None or ref.attribution is None:
            continue
        basis = ref.attribution.time_basis
        ref_layers = {lay.name: lay for lay in ref.attribution.layers}
        for impl, run in runs_of.items():
            if impl == reference or run.attribution is None:
                continue
            for lay in run.attribution.layers:
                base = ref_layers.get(lay.name)
                if base is None:
                    continue
                mine, theirs = lay.attention_on(basis), base.attention_on(basis)
                out.append(LayerDelta(phase=phase, layer=lay.name, implementation=impl,
                                      reference=reference, attention_us=mine,
                                      reference_attention_us=theirs, delta_us=mine - theirs,
                                      ratio=mine / theirs if theirs > 0 else None))
    return out


def not_as_requested(implementation: str, attribution: ModelAttribution | None) -> str | None:
    """Why a run did not run what it names — layers whose attention core dispatched to
    another implementation than ``implementation`` (eager asked, SDPA ran; an SDPA backend
    pinned on attention that calls no SDPA) — else ``None``.

    A backend SDPA chose for itself (``sdpa`` asked, its math backend ran) is still SDPA:
    that is the ``attention-fallback`` finding, not a wrong row."""
    wanted = dispatch_family(implementation)
    if wanted is None or attribution is None:
        return None
    wrong: dict[str, list[str]] = {}
    for layer in attribution.layers:
        ran = layer.actual
        if ran is not None and ran.split(" ", 1)[0] != wanted:
            wrong.setdefault(ran, []).append(layer.name)
    if not wrong:
        return None
    said = "; ".join(f"{ran} ran in {len(names)} layer(s) ({layer_list(names, keep=3)})"
                     for ran, names in wrong.items())
    return (f"{implementation} was asked for but the trace shows {said}: not measured as "
            f"{implementation}")


def drop_lost_reference(runs: list[PhaseRun], reference: str) -> None:
    """Take back the accuracy of every row measured against ``reference`` when a run of
    ``reference`` turned out not to run it (its output was not the reference's)."""
    if not any(r.implementation == reference and r.status == "unsupported"
               and r.attribution is not None for r in runs):
        return
    for r in runs:
        if r.reference == reference:
            r.max_abs_diff = r.tolerance = r.within_tolerance = r.reference = None
            r.notes.append(f"no accuracy: the reference {reference} did not run as "
                           f"{reference}")


def merge_runs(header: ModelRecord, runs: list[PhaseRun], implementations: list[str],
               phases: tuple[str, ...], *, final: bool) -> ModelRecord:
    """The record of a model run measured in parts (one worker per implementation, see
    :mod:`attnprof.run.executors.model_workers`): ``header``'s model and environment, the
    runs in implementation then phase order, and — once ``final`` — the layer deltas
    against the reference (eager when it ran, else the first), status ``complete``."""
    order = {(i, p): n for n, (i, p) in enumerate(
        (i, p) for i in implementations for p in phases)}
    merged = sorted(runs, key=lambda r: order.get((r.implementation, r.phase), len(order)))
    record = msgspec.structs.replace(header, runs=merged, deltas=[], status="partial")
    if final and implementations:
        reference = "eager" if "eager" in implementations else implementations[0]
        drop_lost_reference(record.runs, reference)
        record.deltas = layer_deltas(record.runs, reference)
        record.status = "complete"
    return record
