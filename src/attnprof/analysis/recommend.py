"""Which variant to use at each shape: a pure pass over measured sweep points.

At every point (a shape), a variant is a candidate only if it ran (``ok``), its output is
within the dtype's tolerance of the float64 reference (a fast wrong answer — a ``wrong``
row — is never recommended, and neither is one whose error was not checked), and it meets the
constraints (latency, peak memory). The fastest candidate is recommended, the next is the
runner-up, and the decision names what decided it: a faster variant excluded by a
constraint or by its error, or simply the measured speed.

With a memory limit, a variant that needs less memory may fit a larger batch. For each
candidate the pass finds the largest batch it is measured to run within the limit at the
same shape (points that differ only in batch: sweep ``--batch``, or ``recommend`` runs
them), and the throughput it reaches there, in tokens per second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from attnprof.formatting import format_bytes
from attnprof.record.compare import VariantResult
from attnprof.record.sweep import SweepPoint
from attnprof.spec.costs import resident_bytes

__all__ = ["Constraints", "Headroom", "Pick", "Recommendation", "batch_estimates",
           "recommend", "tokens_per_s"]


@dataclass(frozen=True)
class Constraints:
    """What a recommended variant must meet (``None``: no limit)."""

    max_latency_ms: float | None = None
    max_memory_bytes: int | None = None

    def describe(self) -> str:
        parts = []
        if self.max_latency_ms is not None:
            parts.append(f"latency ≤ {self.max_latency_ms:g} ms")
        if self.max_memory_bytes is not None:
            parts.append(f"peak memory ≤ {format_bytes(self.max_memory_bytes)}")
        return ", ".join(parts) or "no constraints"


@dataclass(frozen=True)
class Pick:
    """A candidate at one point, with the numbers that made it one."""

    variant: str
    latency_ms: float
    peak_memory_bytes: int | None
    max_abs_error: float | None
    point: int


@dataclass(frozen=True)
class Headroom:
    """The largest batch a variant runs within the memory limit at this shape, and the
    throughput measured there."""

    variant: str
    batch: int
    tokens_per_s: float
    point: int


@dataclass
class Recommendation:
    """The choice at one point."""

    point: int
    coords: dict[str, int | str]
    shape: str
    batch: int
    best: Pick | None
    runner_up: Pick | None
    decided_by: str
    #: Variants that were not candidates here, and why.
    excluded: dict[str, str] = field(default_factory=dict)
    headroom: list[Headroom] = field(default_factory=list)


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
        why = _exclusion(row, limits)
        latency = row.latency_ms.median if row.latency_ms else None
        if why is None and latency is not None:
            picks.append(Pick(name, latency, row.peak_memory_bytes, row.max_abs_error,
                              point.index))
        else:
            excluded[name] = why or "no latency measured"
            if latency is not None:  # measured, then excluded: wrong, too slow, timed out
                faster_but.append((latency, name, excluded[name]))
    picks.sort(key=lambda p: p.latency_ms)
    best = picks[0] if picks else None
    runner = picks[1] if len(picks) > 1 else None
    rec = Recommendation(point=point.index, coords=dict(point.coords),
                         shape=point.workload.describe(), batch=point.workload.batch,
                         best=best, runner_up=runner,
                         decided_by=_decision(best, runner, faster_but, limits),
                         excluded=excluded)
    if limits.max_memory_bytes is not None:
        rec.headroom = [h for p in picks
                        if (h := _headroom(point, p.variant, limits, everything)) is not None]
    return rec


def _exclusion(row: VariantResult, limits: Constraints, *, checked: bool = True) -> str | None:
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
    if limits.max_memory_bytes is not None:
        if row.peak_memory_bytes is None:
            return "its peak memory was not measured"
        if row.peak_memory_bytes > limits.max_memory_bytes:
            return (f"peak memory {format_bytes(row.peak_memory_bytes)} > "
                    f"{format_bytes(limits.max_memory_bytes)} (--max-memory)")
    return None


def _decision(best: Pick | None, runner: Pick | None,
              faster_but: list[tuple[float, str, str]], limits: Constraints) -> str:
    if best is None:
        return f"no variant runs here within tolerance and {limits.describe()}"
    beaten = sorted((lat, name, why) for lat, name, why in faster_but if lat < best.latency_ms)
    if beaten:
        lat, name, why = beaten[0]
        return f"{name} is faster ({lat:.3g} ms) but {why}"
    if runner is None:
        return "the only candidate"
    return (f"fastest: {runner.variant} takes {runner.latency_ms / best.latency_ms:.2f}× "
            "as long")


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
        # again (its float64 reference would need more memory than the limit allows).
        if row is None or _exclusion(row, limits, checked=False) is not None:
            continue
        rate = tokens_per_s(other, row)
        if rate is not None and (best is None or other.workload.batch > best.batch):
            best = Headroom(variant, other.workload.batch, rate, other.index)
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
            if row is None or _exclusion(row, limits) is not None or not row.peak_memory_bytes:
                continue
            per_batch = (row.peak_memory_bytes + resident_bytes(point.workload)) \
                / point.workload.batch
            # Three quarters of the proportional figure: allocator rounding and workspace
            # make the real ceiling lower than the proportion says.
            batch = int(0.75 * limits.max_memory_bytes // per_batch)
            if batch > point.workload.batch:
                out[(point.index, name)] = batch
    return out
