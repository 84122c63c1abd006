"""What a model run's rows say, built once from what was measured: latency and rates, the
KV cache computed beside measured, accuracy against the reference, per-layer deltas.

The runner (:mod:`attnprof.run.model`) only measures and calls these.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from attnprof.formatting import one_line
from attnprof.knowledge.sdpa_backends import sdpa_backend
from attnprof.measure.accuracy import TOLERANCE
from attnprof.measure.memory import MemoryProfile
from attnprof.measure.stats import summarize
from attnprof.models.loaded import LoadedModel
from attnprof.models.locate import Located
from attnprof.record.compare import Status
from attnprof.record.model import (
    AttentionModule,
    KvCacheReport,
    LayerDelta,
    ModelInfo,
    PhaseRun,
)
from attnprof.record.model_attribution import ModelAttribution
from attnprof.run.rows import is_oom, latency
from attnprof.spec.workload import DTYPE_BYTES

if TYPE_CHECKING:
    import torch

__all__ = ["PhaseMeasurements", "attention_rows", "failed_run", "kv_cache_report",
           "layer_deltas", "model_info", "phase_row", "relative_error"]


@dataclass
class PhaseMeasurements:
    """Everything measured of one (implementation, phase) before its row is built."""

    tokens: int
    bare_ms: list[float] = field(default_factory=list)
    labelled_ms: list[float] = field(default_factory=list)
    #: Each interleaved round's labelled median over its bare median, less 1.
    round_overheads: list[float] = field(default_factory=list)
    memory: MemoryProfile | None = None
    kv_cache: KvCacheReport | None = None
    trace: str | None = None
    attribution: ModelAttribution | None = None
    error: float | None = None
    reference: str | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def model_info(loaded: LoadedModel, default_impl: str | None) -> ModelInfo:
    """What the model is, from its config or its parameters."""
    s = loaded.sizes
    return ModelInfo(source=loaded.source, architecture=type(loaded.model).__name__,
                     family=loaded.family,
                     parameters=sum(p.numel() for p in loaded.model.parameters()),
                     weights=loaded.weights,  # type: ignore[arg-type]
                     dtype=loaded.dtype, device=loaded.device, batch=s.get("batch"),
                     seq=s.get("seq"), layers=s.get("layers"), hidden=s.get("hidden"),
                     heads=s.get("heads"), kv_heads=s.get("kv_heads"),
                     head_dim=s.get("head_dim"), default_implementation=default_impl)


def attention_rows(located: Located) -> list[AttentionModule]:
    """The attention modules found, with how each was recognised."""
    return [AttentionModule(path=f.path or "(the model itself)", cls=f.cls,
                            recognised_by=f.recognised_by, layer=f.layer,
                            parts=located.parts_of(f.path), kind=f.kind)
            for f in located.attention]


def kv_cache_report(loaded: LoadedModel, cache_len: int, new_tokens: int,
                    before: int | None, after: int | None) -> KvCacheReport:
    """Bytes per token from the config (layers × 2 × kv_heads × head_dim × dtype bytes)
    beside the growth the cache object showed over ``new_tokens`` tokens."""
    s = loaded.sizes
    layers, kv, hd = s.get("layers"), s.get("kv_heads"), s.get("head_dim")
    elem = DTYPE_BYTES.get(loaded.dtype)
    per_layer = 2 * kv * hd * elem if kv and hd and elem else None
    computed = layers * per_layer if layers and per_layer else None
    batch = s.get("batch") or 1
    measured = None
    if before is not None and after is not None and new_tokens > 0:
        measured = (after - before) / (new_tokens * batch)
    formula = (f"{layers} layers × 2 (K,V) × {kv} kv_heads × {hd} head_dim × {elem} bytes"
               if computed else "unknown: the config does not give kv_heads and head_dim")
    return KvCacheReport(cache_len=cache_len, new_tokens=new_tokens,
                         computed_bytes_per_token=computed,
                         computed_bytes_per_token_per_layer=per_layer, formula=formula,
                         measured_bytes_per_token=measured,
                         measured_cache_bytes=(before // batch) if before is not None else None)


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
        tokens_per_step=m.tokens,
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
        notes=m.notes)


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


def failed_run(implementation: str, phase: str, exc: BaseException,
               warnings: list[str]) -> PhaseRun:
    """The row of a phase that raised: ``oom`` or ``error`` with the message."""
    status = "oom" if is_oom(exc) else "error"
    if isinstance(exc, NotImplementedError):
        status = "unsupported"
    return PhaseRun(implementation=implementation, phase=phase, status=status,  # type: ignore[arg-type]
                    reason=f"{type(exc).__name__}: {one_line(str(exc))}",
                    warnings=warnings)


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

