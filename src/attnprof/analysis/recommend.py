"""Which variant to use at each shape: a pure pass over measured sweep points.

At every point (a shape), a variant is a candidate only if it ran (``ok``), its output is
within the dtype's tolerance of the float64 reference (a fast wrong answer — a ``wrong``
row — is never recommended, and neither is one whose error was not checked), and it meets
the constraints: latency, and peak memory by attnprof's one definition of "fits"
(:mod:`attnprof.analysis.memory_fit`). The fastest candidate is recommended, the next is
the runner-up, and the decision names what decided it: a faster variant excluded by a
constraint or by its error, or simply the measured speed — and when the runner-up's
latency is within the noise of the best's (:mod:`attnprof.analysis.noise`), it says
"tie" and names both: the measurement cannot choose between them.

With a memory limit, a variant that needs less memory may fit a larger batch. For each
candidate the pass finds the largest batch it is measured to run within the limit at the
same shape (points that differ only in batch: sweep ``--batch``, or ``recommend`` runs
them), and the throughput it reaches there, in tokens per second.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnprof.analysis import memory_fit, noise
from attnprof.record.compare import VariantResult
from attnprof.record.recommendation import Constraints, Headroom, Pick, Recommendation
from attnprof.record.sweep import SweepPoint

__all__ = ["Constraints", "Headroom", "Pick", "Recommendation", "batch_estimates", "exclusion",
           "recommend", "tokens_per_s"]


def tokens_per_s(point: SweepPoint, row: VariantResult) -> float | None:
    """Query tokens a step processes per second (batch × query length / latency)."""
    if row.latency_ms is None or row.latency_ms.median <= 0:
        return None
    workload = point.workload
    return workload.batch * workload.q_len / (row.latency_ms.median / 1e3)


def recommend(points: Sequence[SweepPoint], variants: Sequence[str],
              constraints: Constraints,
              extra: Sequence[SweepPoint] = ()) -> list[Recommendation]:
    """One recommendation per point, in grid order (see the module doc); ``extra`` points
    (larger batches measured for the headroom) inform the headroom only."""
    ordered = sorted(points, key=lambda p: p.index)
    everything = [*ordered, *extra]
    return [_choose(p, variants, constraints, everything) for p in ordered]


def _choose(point: SweepPoint, variants: Sequence[str], limits: Constraints,
            everything: Sequence[SweepPoint]) -> Recommendation:
    picks: list[Pick] = []
    excluded: dict[str, str] = {}
    faster_but: list[tuple[float, str, str]] = []  # (latency, variant, why excluded)
    for name in variants:
        row = point.result(name)
        if row is None:
            excluded[name] = "not measured here"
            continue
        why = exclusion(row, limits)
        latency = row.latency_ms.median if row.latency_ms else None
        if why is None and latency is not None:
            picks.append(Pick(variant=name, latency_ms=latency,
                              spread=noise.spread(row.latency_ms),
                              peak_memory_bytes=row.peak_memory_bytes,
                              max_abs_error=row.max_abs_error, point=point.index))
        else:
            excluded[name] = why or "no latency measured"
            if latency is not None:  # measured, then excluded: wrong, too slow, timed out
                faster_but.append((latency, name, excluded[name]))
    picks.sort(key=lambda p: p.latency_ms)
    best = picks[0] if picks else None
    runner = picks[1] if len(picks) > 1 else None
    tie = [p.variant for p in picks if best is not None and not noise.differ(
        p.latency_ms, best.latency_ms, p.spread, best.spread)]
    rec = Recommendation(point=point.index, coords=dict(point.coords),
                         shape=point.workload.describe(), batch=point.workload.batch,
                         best=best, runner_up=runner,
                         decided_by=_decision(best, runner, faster_but, limits, tie),
                         tie=tie if len(tie) > 1 else [], excluded=excluded)
    if limits.max_memory_bytes is not None:
        rec.headroom = [h for p in picks
                        if (h := _headroom(point, p.variant, limits, everything)) is not None]
    return rec


def exclusion(row: VariantResult, limits: Constraints, *, checked: bool = True) -> str | None:
    """Why ``row`` cannot be recommended, or ``None`` (``checked``: its error must have
    been checked)."""
    if row.status != "ok":
        return f"{row.status} here: {row.reason}" if row.reason else f"{row.status} here"
    if row.within_tolerance is False:
        return (f"out of tolerance: max error {row.max_abs_error:.2g} > {row.tolerance:.0e} "
                "against the float64 reference")
    if row.within_tolerance is None and checked:
        return "its error was not checked"
    latency = row.latency_ms.median if row.latency_ms else None
    if limits.max_latency_ms is not None and latency is not None \
            and latency > limits.max_latency_ms:
        return f"latency {latency:.3g} ms > {limits.max_latency_ms:g} ms (--max-latency)"
    if limits.max_memory_bytes is not None and (
            too_big := memory_fit.over(row, limits.max_memory_bytes)):
        return f"{too_big} (--max-memory)"
    return None


def _decision(best: Pick | None, runner: Pick | None,
              faster_but: list[tuple[float, str, str]], limits: Constraints,
              tie: list[str]) -> str:
    if best is None:
        return f"no variant runs here within tolerance and {limits.describe()}"
    beaten = sorted((lat, name, why) for lat, name, why in faster_but if lat < best.latency_ms)
    parts = []
    if beaten:
        lat, name, why = beaten[0]
        parts.append(f"{name} is faster ({lat:.3g} ms) but {why}")
    if runner is None:
        return parts[0] if parts else "the only candidate"
    ratio = runner.latency_ms / best.latency_ms
    if len(tie) > 1:
        within = noise.margin(*(p.spread for p in (best, runner)))
        parts.append(f"tie within the noise: {' and '.join(tie)} "
                     f"({runner.variant} {ratio:.2f}× as long, within ±{within:.0%})")
    elif not parts:
        parts.append(f"fastest: {runner.variant} takes {ratio:.2f}× as long")
    return "; ".join(parts)


def _headroom(point: SweepPoint, variant: str, limits: Constraints,
              everything: Sequence[SweepPoint]) -> Headroom | None:
    """The largest measured batch of ``variant`` within the limits at this shape."""
    same_shape = point.workload.replace(batch=0)
    best: Headroom | None = None
    for other in everything:
        if other.workload.replace(batch=0) != same_shape:
            continue
        row = other.result(variant)
        # A larger batch of a variant already checked at this shape need not be checked
        # again (the measurement runs without the float64 reference).
        if row is None or exclusion(row, limits, checked=False) is not None:
            continue
        rate = tokens_per_s(other, row)
        if rate is not None and (best is None or other.workload.batch > best.batch):
            best = Headroom(variant=variant, batch=other.workload.batch, tokens_per_s=rate,
                            point=other.index)
    return best


def batch_estimates(points: Sequence[SweepPoint], variants: Sequence[str],
                    limits: Constraints) -> dict[tuple[int, str], int]:
    """For each (point, variant) within the limits, the largest batch its memory allows if
    peak memory grows in proportion to batch (it does for attention's tensors), with a
    margin — the batch worth measuring next. Only batches above the point's own are returned."""
    if limits.max_memory_bytes is None:
        return {}
    out = {}
    for point in points:
        for name in variants:
            row = point.result(name)
            if row is None or exclusion(row, limits) is not None or not row.peak_memory_bytes:
                continue
            per_batch = row.peak_memory_bytes / point.workload.batch  # what "fits" counts
            # Three quarters of the proportional figure: workspaces and per-thread buffers
            # do not shrink with batch, so the real ceiling is lower than the proportion.
            batch = int(0.75 * limits.max_memory_bytes // per_batch)
            if batch > point.workload.batch:
                out[(point.index, name)] = batch
    return out
