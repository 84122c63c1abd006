"""``recommend --objective cost``: the cheapest variant per shape, per million tokens at a
price, instead of the fastest per call.

On one machine at one shape and batch, the cheaper variant per token is the faster one: the
price is the same for both and so are the tokens. What can change the order is the memory
limit: a variant that needs less memory may run a larger batch within it, and a larger batch
buys more tokens per second of the same machine. So each candidate (a row that ran, within
tolerance and within the constraints: the rule of :mod:`attnprof.analysis.recommend`) is
costed at the lowest cost per million tokens it was *measured* to reach at this shape
within the limits — its own batch, or, under a memory limit, a larger one measured at the
same shape (``recommend``'s headroom runs, or the sweep's own larger batches) — and the
candidates are ranked by that. Without a memory limit every point is costed at its own
batch: a larger batch is then another point, not a choice the limit left open. Two costs
within the noise of their latencies (the same relative spread: cost is latency times a
constant) are a tie, named as one. Pure: figures in, figures out.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from attnprof.analysis import noise
from attnprof.analysis.cost import row_cost
from attnprof.analysis.recommend import Constraints, Pick, Recommendation, exclusion, recommend
from attnprof.record.sweep import SweepPoint

__all__ = ["price_picks", "recommend_by_cost"]


def recommend_by_cost(points: Sequence[SweepPoint], variants: Sequence[str],
                      constraints: Constraints, usd_per_hour: float,
                      extra: Sequence[SweepPoint] = ()) -> list[Recommendation]:
    """One recommendation per point, in grid order, the picks ranked by US dollars per
    million tokens at ``usd_per_hour`` (see the module doc); ``extra``: the larger batches
    measured for the headroom, where a candidate may be cheaper per token."""
    everything = [*sorted(points, key=lambda p: p.index), *extra]
    # The latency pass decides who is a candidate and why the others are not.
    by_latency = recommend(points, variants, constraints, extra)
    return [_by_cost(rec, variants, everything, constraints, usd_per_hour)
            for rec in by_latency]


def _cheapest(point: SweepPoint, variant: str, constraints: Constraints,
              everything: Sequence[SweepPoint], usd_per_hour: float) -> Pick | None:
    """``variant``'s cheapest measurement per token at ``point``'s shape within the
    limits, as a pick (at the point's own batch when no larger one is cheaper)."""
    shape = point.workload.replace(batch=0)
    found: Pick | None = None
    for other in everything:
        # Another batch is the candidate's to choose only under a memory limit (the
        # headroom's larger batches): otherwise each point is costed at its own batch.
        if other is not point and (constraints.max_memory_bytes is None
                                   or other.workload.batch <= point.workload.batch
                                   or other.workload.replace(batch=0) != shape):
            continue
        row = other.result(variant)
        if row is None or row.latency_ms is None:
            continue
        # At the point itself the row is a candidate already; a larger batch of it need
        # not be checked against the float64 reference again, as for the headroom.
        if other is not point and exclusion(row, constraints, checked=False) is not None:
            continue
        cost = row_cost(row, other.workload, usd_per_hour)
        if cost is None:
            continue
        if found is None or found.usd_per_million_tokens is None \
                or cost.usd_per_million_tokens < found.usd_per_million_tokens:
            found = Pick(variant=variant, latency_ms=row.latency_ms.median,
                         spread=noise.spread(row.latency_ms),
                         peak_memory_bytes=row.peak_memory_bytes,
                         max_abs_error=row.max_abs_error, point=other.index,
                         usd_per_million_tokens=cost.usd_per_million_tokens,
                         batch=other.workload.batch)
    return found


def _by_cost(rec: Recommendation, variants: Sequence[str],
             everything: Sequence[SweepPoint], constraints: Constraints,
             usd_per_hour: float) -> Recommendation:
    point = next(p for p in everything if p.index == rec.point)
    candidates = [v for v in variants if v not in rec.excluded]
    picks = [p for v in candidates
             if (p := _cheapest(point, v, constraints, everything, usd_per_hour)) is not None]
    picks.sort(key=lambda p: p.usd_per_million_tokens or 0.0)
    best = picks[0] if picks else None
    runner = picks[1] if len(picks) > 1 else None
    tie = [p.variant for p in picks if best is not None and not noise.differ(
        p.usd_per_million_tokens or 0.0, best.usd_per_million_tokens or 0.0,
        p.spread, best.spread)]
    rec.best, rec.runner_up = best, runner
    rec.tie = tie if len(tie) > 1 else []
    rec.decided_by = _decision(best, runner, rec, tie)
    return rec


def _decision(best: Pick | None, runner: Pick | None, rec: Recommendation,
              tie: list[str]) -> str:
    if best is None or best.usd_per_million_tokens is None:
        return rec.decided_by  # no candidate: the latency pass says why
    at = f" at batch {best.batch}" if best.batch != rec.batch else ""
    if runner is None or runner.usd_per_million_tokens is None:
        return f"the only candidate; ${best.usd_per_million_tokens:.4g} per 1M tokens{at}"
    ratio = runner.usd_per_million_tokens / best.usd_per_million_tokens
    if len(tie) > 1:
        within = noise.margin(best.spread, runner.spread)
        return (f"tie within the noise: {' and '.join(tie)} ({runner.variant} "
                f"{ratio:.2f}× the cost per token, within ±{within:.0%})")
    why = f"cheapest per token{at}: {runner.variant} costs {ratio:.2f}× as much"
    if runner.latency_ms < best.latency_ms and (best.batch or 0) > (runner.batch or 0):
        why += (f" (it is faster per call, {runner.latency_ms:.3g} ms at batch "
                f"{runner.batch}, but fits a smaller batch within the memory limit)")
    return why


def price_picks(recs: list[Recommendation], points: Sequence[SweepPoint],
                usd_per_hour: float) -> list[Recommendation]:
    """``recs`` (ranked by latency) with each pick's cost per million tokens at its own
    point, so a priced recommendation shows what its choice costs."""
    by_index = {p.index: p for p in points}

    def priced(pick: Pick | None) -> Pick | None:
        if pick is None or pick.point not in by_index:
            return pick
        point = by_index[pick.point]
        row = point.result(pick.variant)
        cost = row_cost(row, point.workload, usd_per_hour) if row is not None else None
        if cost is None:
            return pick
        return msgspec.structs.replace(pick, usd_per_million_tokens=cost.usd_per_million_tokens,
                                       batch=point.workload.batch)

    for rec in recs:
        rec.best, rec.runner_up = priced(rec.best), priced(rec.runner_up)
    return recs
