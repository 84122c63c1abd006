"""GQA or MHA (or another head layout): a pure pass that sets a sweep's structural choices
side by side, for ``recommend --kv-heads 2,4`` (and ``--heads``, ``--head-dim`` lists).

The structural fields (``heads``, ``kv_heads``, ``head_dim``) change the problem, not only
its speed: fewer K/V heads hold a smaller KV cache per token. So they are not candidates
in one recommendation but rows of one table: for every shape that differs only in them
(the same seq, batch, mode, …), each structure's recommended variant with its latency,
peak memory and KV cache bytes per token (K and V, per layer), and whether it is slower
than the fastest structure beyond the noise — the Mann-Whitney U test on the two variants'
samples and a median difference beyond the noise margin, the rule ``model``'s ranks use —
or a tie with its p-value. Points run one after another, not interleaved, so drift
between them is not cancelled: the caption says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnprof.noise import ALPHA, differ, mann_whitney_p, relative_iqr
from attnprof.record.recommendation import Recommendation, StructureChoice
from attnprof.record.sweep import SweepPoint

__all__ = ["STRUCTURAL", "kv_cache_per_token", "structure_choices", "structure_label"]

#: The workload fields whose values are structures to set side by side.
STRUCTURAL = ("heads", "kv_heads", "head_dim")


def structure_label(heads: int, kv_heads: int) -> str:
    """``MHA``, ``MQA`` or ``GQA 4:1`` (query heads per K/V head)."""
    if kv_heads == heads:
        return "MHA"
    if kv_heads == 1:
        return "MQA"
    return f"GQA {heads // kv_heads}:1"


def kv_cache_per_token(point: SweepPoint) -> int:
    """Bytes of K and V one token keeps in the cache, per layer: 2·kv_heads·head_dim·elem."""
    w = point.workload
    return 2 * w.num_kv_heads * w.head_dim * w.element_bytes


def structure_choices(points: Sequence[SweepPoint],
                      recs: Sequence[Recommendation]) -> list[StructureChoice]:
    """One row per point whose structural coordinates vary, grouped by the rest of its
    coordinates (empty when no structural field was swept)."""
    swept = {k for p in points for k in p.coords if k in STRUCTURAL}
    if not swept or not any(len({p.coords.get(k) for p in points}) > 1 for k in swept):
        return []
    by_index = {r.point: r for r in recs}
    groups: dict[tuple[tuple[str, int | str], ...], list[SweepPoint]] = {}
    for p in sorted(points, key=lambda p: p.index):
        rest = tuple(sorted((k, v) for k, v in p.coords.items() if k not in STRUCTURAL))
        groups.setdefault(rest, []).append(p)
    rows: list[StructureChoice] = []
    for rest, members in groups.items():
        rows += _group(dict(rest), members, by_index)
    return rows


def _group(rest: dict[str, int | str], members: list[SweepPoint],
           by_index: dict[int, Recommendation]) -> list[StructureChoice]:
    best = {p.index: by_index[p.index].best for p in members if p.index in by_index}
    timed = [p for p in members if best.get(p.index) is not None]
    fastest = min(timed, key=lambda p: best[p.index].latency_ms) if timed else None  # type: ignore[union-attr]
    rows = []
    for p in members:
        w, pick = p.workload, best.get(p.index)
        row = StructureChoice(
            point=p.index, group=", ".join(f"{k}={v}" for k, v in rest.items()),
            structure=structure_label(w.heads, w.num_kv_heads), heads=w.heads,
            kv_heads=w.num_kv_heads, head_dim=w.head_dim,
            kv_cache_bytes_per_token=kv_cache_per_token(p))
        if pick is not None and fastest is not None:
            row.variant, row.latency_ms = pick.variant, pick.latency_ms
            row.peak_memory_bytes = pick.peak_memory_bytes
            row.verdict, row.p_value = _versus(p, pick.variant, fastest,
                                               best[fastest.index].variant)  # type: ignore[union-attr]
        rows.append(row)
    return rows


def _versus(point: SweepPoint, variant: str, fastest: SweepPoint,
            fastest_variant: str) -> tuple[str, float | None]:
    """``fastest``, ``tie`` or ``slower``, and the p-value, of ``point``'s best row against
    the fastest structure's."""
    if point.index == fastest.index:
        return "fastest", None
    a, b = point.result(variant), fastest.result(fastest_variant)
    if a is None or b is None or a.latency_ms is None or b.latency_ms is None:
        return "—", None
    la, lb = a.latency_ms, b.latency_ms
    p = mann_whitney_p(la.samples, lb.samples)
    beyond = differ(la.median, lb.median, relative_iqr(la.median, la.iqr),
                    relative_iqr(lb.median, lb.iqr))
    return ("slower" if p <= ALPHA and beyond else "tie"), p
