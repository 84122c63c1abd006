"""What ``attnprof recommend`` decided, kept in the sweep record it decided from.

Plain data: per point (a shape) the recommended variant, the runner-up, the variants tied
with the best within the noise, what decided it, the variants that were not candidates and
why, and — under a memory limit — the largest batch each candidate was measured to fit and
the throughput there. The analysis pass (:mod:`attnprof.analysis.recommend`) fills it;
``recommend --json`` saves it as the sweep record's ``recommendation``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from attnprof.formatting import format_bytes
from attnprof.record.price import Price

__all__ = ["Constraints", "Headroom", "Pick", "Recommendation", "Recommended",
           "StructureChoice"]


class Constraints(msgspec.Struct, frozen=True, kw_only=True):
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


class Pick(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate at one point, with the numbers that made it one."""

    variant: str
    latency_ms: float
    #: The latency's inter-quartile range over its median: how far it may be trusted.
    spread: float
    peak_memory_bytes: int | None
    max_abs_error: float | None
    point: int
    #: Under ``--objective cost``: US dollars per million tokens at the record's price, at
    #: the batch this pick was measured at (``batch``: the shape's own, or a larger one the
    #: memory limit lets it run; ``point`` is where).
    usd_per_million_tokens: float | None = None
    batch: int | None = None


class Headroom(msgspec.Struct, frozen=True, kw_only=True):
    """The largest batch a variant runs within the memory limit at this shape, and the
    throughput measured there."""

    variant: str
    batch: int
    tokens_per_s: float
    point: int


class Recommendation(msgspec.Struct, kw_only=True):
    """The choice at one point."""

    point: int
    coords: dict[str, int | str]
    shape: str
    batch: int
    best: Pick | None
    runner_up: Pick | None
    decided_by: str
    #: The candidates whose latency is within the noise of the best's (the best first):
    #: a tie, when there are two or more.
    tie: list[str] = msgspec.field(default_factory=list)
    #: Variants that were not candidates here, and why.
    excluded: dict[str, str] = msgspec.field(default_factory=dict)
    headroom: list[Headroom] = msgspec.field(default_factory=list)


class StructureChoice(msgspec.Struct, kw_only=True):
    """One head layout at one shape, beside the others swept at that shape (``recommend
    --kv-heads 2,4``): its recommended variant and what it costs
    (:mod:`attnprof.analysis.structure_choice`)."""

    point: int
    #: The coordinates the structures share (``seq=256``), as one line.
    group: str
    #: ``MHA``, ``MQA`` or ``GQA 4:1``.
    structure: str
    heads: int
    kv_heads: int
    head_dim: int
    #: K and V bytes one token keeps in the cache, per layer.
    kv_cache_bytes_per_token: int
    variant: str | None = None
    latency_ms: float | None = None
    peak_memory_bytes: int | None = None
    #: Against the group's fastest structure: ``fastest``, ``tie`` or ``slower`` (``None``:
    #: nothing ran within the constraints here).
    verdict: str | None = None
    p_value: float | None = None


class Recommended(msgspec.Struct, kw_only=True):
    """A recommendation over a sweep's points: the limits, where the points came from,
    and one choice per point."""

    constraints: Constraints
    #: ``measured now`` or the sweep record it was read from.
    source: str
    recommendations: list[Recommendation]
    #: The head layouts set side by side, when heads, KV heads or head dim were swept.
    structures: list[StructureChoice] = msgspec.field(default_factory=list)
    #: What the picks are ranked by: ``latency`` (per call) or ``cost`` (per million
    #: tokens at ``price``: ``recommend --objective cost``).
    objective: Literal["latency", "cost"] = "latency"
    price: Price | None = None
