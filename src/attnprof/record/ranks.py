"""``attnprof analyze`` on a distributed run's traces: one summary per rank, judged together.

A :class:`RankSummary` is what a worker hands back after reading one rank's trace: a few
hundred numbers and names, never the trace's tables, so that reading thousands of ranks
costs the memory of the traces being read at that moment, not of all of them. A rank
whose trace could not be read is a summary with ``error`` set and nothing measured.

:class:`RanksRecord` (kind ``ranks``) holds every rank's summary, the per-step straggler
table and the cross-rank findings (stragglers, divergence), and says what could not be
judged (ranks missing from the set, a rank without steps).

Units as in :mod:`attnprof.record.trace_report`: times in µs named ``*_us``; ``None`` means
"the trace does not say", never zero.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from attnprof.record.base import Listing, RecordBase
from attnprof.record.finding import Finding, top_finding

__all__ = ["DeviceTotal", "RankSource", "RankSummary", "RanksRecord", "StepStraggler",
           "StepTime", "TemporalBreakdown"]

#: Where a rank's number came from: the trace's ``distributedInfo``, else its file name.
RankSource = Literal["distributedInfo", "file name"]


class StepTime(msgspec.Struct, kw_only=True):
    """One ``ProfilerStep#N`` of one rank."""

    step: int  # N of ProfilerStep#N
    dur_us: float  # CPU wall time of the step
    #: Time in collectives started inside the step: communication kernels (NCCL/RCCL) on a
    #: GPU, the backend's collective annotations (``gloo:all_reduce``, ...) on a CPU. A
    #: collective lasts until every rank has joined it, so this is mostly waiting.
    collective_us: float
    collectives: int
    #: Kernels (compute ops on a CPU-only trace) launched inside the step.
    kernels: int


class DeviceTotal(msgspec.Struct, kw_only=True):
    """Every device event of one category in the whole trace: count and summed duration."""

    category: str  # compute | communication | memcpy | memset
    count: int
    total_us: float


class TemporalBreakdown(msgspec.Struct, kw_only=True):
    """Device time as Holistic Trace Analysis defines it (``get_temporal_breakdown``,
    ``get_comm_comp_overlap``), over the device events launched before the last profiler
    step began (HTA leaves the last step out: the export can cut it short).

    ``span_us`` runs from the first event's start to the last one's end; ``idle_us`` is the
    part of it in which no event ran; ``compute_us`` the union of the compute kernels'
    intervals; ``non_compute_us`` the rest (communication, copies and sets running alone).
    ``overlap`` is the share of the communication kernels' time (their union) during which
    a compute kernel ran too; None without communication.
    """

    events: int
    window: str  # in words: which events were counted
    span_us: float
    compute_us: float
    non_compute_us: float
    idle_us: float
    overlap: float | None


class RankSummary(msgspec.Struct, kw_only=True):
    """What one rank's trace says, compactly (per step figures are means over its steps)."""

    source: str
    rank: int | None
    rank_from: RankSource | None
    world_size: int | None
    backend: str | None = None
    #: Why the trace could not be read; every measured field is then empty.
    error: str | None = None
    device: str | None = None  # cpu | cuda | rocm | ...
    events: int = 0
    #: Every device event of the trace by category: exactly the raw sums of the file.
    device_totals: list[DeviceTotal] = msgspec.field(default_factory=list)
    steps: list[StepTime] = msgspec.field(default_factory=list)
    #: "kernels" (device events) or "cpu-ops" (compute ops on a CPU-only trace).
    kernel_source: str = "kernels"
    kernels_per_step: float | None = None
    cpu_us_per_step: float | None = None
    #: Per step: device time by category (compute, communication, memcpy, memset, idle) on
    #: a GPU; on a CPU-only trace the compute ops' work, the collectives' time and the rest
    #: of the CPU time (framework).
    categories_us: dict[str, float] = msgspec.field(default_factory=dict)
    attention_us_per_step: float | None = None
    attention_share: float | None = None
    sdpa_backend: str | None = None
    #: Attention ops and fused-attention kernels that ran, by name: count per step.
    attention: dict[str, float] = msgspec.field(default_factory=dict)
    #: Every kernel (compute op on a CPU-only trace) by name: count per step.
    kernels: dict[str, float] = msgspec.field(default_factory=dict)
    temporal: TemporalBreakdown | None = None
    notes: list[str] = msgspec.field(default_factory=list)

    @property
    def label(self) -> str:
        """``rank 3``, or the file when the rank is unknown."""
        return f"rank {self.rank}" if self.rank is not None else self.source

    @property
    def collective_us_per_step(self) -> float | None:
        """Mean time in collectives per step (None without steps)."""
        if not self.steps:
            return None
        return sum(s.collective_us for s in self.steps) / len(self.steps)

    @property
    def step_us(self) -> float | None:
        """Median step time (None without steps)."""
        import statistics  # here: analyze of a single trace never asks (1-2 ms at start-up)

        return statistics.median(s.dur_us for s in self.steps) if self.steps else None


class StepStraggler(msgspec.Struct, kw_only=True):
    """One step every rank ran: the rank the others waited for, and by how much.

    The straggler is the rank that spent the least time in collectives: it arrived last,
    so it barely waited while the others waited for it. ``extra_us`` is the median of the
    other ranks' collective time minus the straggler's: what its lateness cost the rest.
    ``straggler`` is ``None`` when that is within the noise (no rank was late); the
    figures are then the least-waiting rank's.
    """

    step: int
    straggler: int | None
    straggler_collective_us: float
    others_collective_us: float  # median over the other ranks
    extra_us: float
    #: Every rank compared in this step, and its collective time (same order).
    ranks: list[int] = msgspec.field(default_factory=list)
    collective_us: list[float] = msgspec.field(default_factory=list)


#: The rank set header: the rank, its figures per step, HTA's breakdown, the set.
RANK_COLUMNS: tuple[str, ...] = (
    "rank", "source", "rank_from", "world_size", "backend", "device", "error", "steps",
    "step_us", "cpu_us_per_step", "compute_us", "communication_us", "memcpy_us", "memset_us",
    "idle_us", "framework_us", "collective_us_per_step", "kernels_per_step", "kernel_source",
    "attention_us_per_step", "attention_share", "sdpa_backend", "device_events",
    "device_us", "hta_span_us", "hta_compute_us", "hta_non_compute_us", "hta_idle_us",
    "hta_overlap", "straggler_steps", "findings", "created")


class RanksRecord(RecordBase, tag="ranks"):
    """A distributed run's traces read together: per-rank summaries, ordered by rank (an
    unreadable file without a known rank last), the straggler of each step, cross-rank
    findings, and what could not be judged."""

    world_size: int | None = None
    ranks: list[RankSummary] = msgspec.field(default_factory=list)
    steps: list[StepStraggler] = msgspec.field(default_factory=list)
    findings: list[Finding] = msgspec.field(default_factory=list)
    #: What could not be judged, and why (ranks missing, a rank without steps, ...).
    notes: list[str] = msgspec.field(default_factory=list)
    #: Where the ranks were read: "inline", "process" (local workers) or "ray".
    executor: str = "process"
    #: Ranks read at once (None: as many as the Ray cluster had room for).
    workers: int | None = None

    def headline(self) -> str:
        """How many ranks were read, the most frequent straggler, the top finding."""
        from collections import Counter

        said = f"{len(self.ranks)} ranks read"
        late = Counter(s.straggler for s in self.steps if s.straggler is not None)
        if late:
            rank, n = late.most_common(1)[0]
            said += f"; rank {rank} was the straggler in {n} of {len(self.steps)} steps"
        found = top_finding([("ranks", f) for f in self.findings])
        return said + "." + (f" {found}" if found else "")

    def listing(self) -> Listing:
        """How many ranks of how large a world, the first file; their device."""
        world = f" (world size {self.world_size})" if self.world_size else ""
        first = f": {self.ranks[0].source}" if self.ranks else ""
        more = f" and {len(self.ranks) - 1} more" if len(self.ranks) > 1 else ""
        return Listing(summary=f"{len(self.ranks)} ranks{world}{first}{more}",
                       device=next((r.device for r in self.ranks if r.device), None))

    def rank(self, number: int) -> RankSummary:
        """The summary of rank ``number`` (``KeyError`` if absent)."""
        for r in self.ranks:
            if r.rank == number:
                return r
        raise KeyError(number)

    @property
    def unreadable(self) -> list[RankSummary]:
        """The ranks whose trace could not be read."""
        return [r for r in self.ranks if r.error is not None]

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per rank."""
        return RANK_COLUMNS, ranks_lines(self)


def ranks_lines(record: RanksRecord) -> list[dict[str, Any]]:
    """A rank set: one line per rank (an unreadable one with its error)."""
    lines: list[dict[str, Any]] = []
    for r in record.ranks:
        t = r.temporal
        line: dict[str, Any] = {
            "rank": r.rank, "source": r.source, "rank_from": r.rank_from,
            "world_size": r.world_size, "backend": r.backend, "device": r.device,
            "error": r.error, "steps": len(r.steps) if r.error is None else None,
            "step_us": r.step_us, "cpu_us_per_step": r.cpu_us_per_step,
            "collective_us_per_step": r.collective_us_per_step,
            "kernels_per_step": r.kernels_per_step,
            "kernel_source": r.kernel_source if r.error is None else None,
            "attention_us_per_step": r.attention_us_per_step,
            "attention_share": r.attention_share, "sdpa_backend": r.sdpa_backend,
            "device_events": sum(d.count for d in r.device_totals) if r.device_totals else None,
            "device_us": sum(d.total_us for d in r.device_totals) if r.device_totals else None,
            "hta_span_us": t.span_us if t else None, "hta_compute_us": t.compute_us if t else None,
            "hta_non_compute_us": t.non_compute_us if t else None,
            "hta_idle_us": t.idle_us if t else None, "hta_overlap": t.overlap if t else None,
            "straggler_steps": sum(1 for s in record.steps if s.straggler == r.rank),
            "findings": sum(1 for f in record.findings
                            if r.rank in f.data.get("ranks", []) or f.data.get("rank") == r.rank),
            "created": record.created}
        line.update({f"{k}_us": v for k, v in r.categories_us.items()
                     if f"{k}_us" in RANK_COLUMNS})
        lines.append(line)
    return lines
