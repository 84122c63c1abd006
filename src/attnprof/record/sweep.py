"""The sweep record: one comparison per point of a grid of workloads, and how they scale.

A :class:`SweepRecord` (kind ``sweep``) holds what was asked — the base workload, the
:class:`~attnprof.workload.grid.Grid` of swept fields, the variants and settings — and one
:class:`SweepPoint` per finished point, appended as each finishes (the record is saved
atomically after every point, so an interrupted sweep loses at most the point that was
running). A point's rows are the comparison's own :class:`VariantResult` rows, statuses
included: ``oom``, ``crashed``, ``timeout`` and ``skipped`` (inferred out of memory from a
smaller point, which :attr:`SweepPoint.inferred` names).

``fits`` and ``crossovers`` are written by the scaling pass
(:mod:`attnprof.analysis.scaling`) over the points; they are data, so any renderer shows
them without fitting anything.

Points are a tagged union on ``target`` (``attention`` today), so points of a model sweep
can join the same record kind later with their own fields.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from attnprof.record.base import Listing, RecordBase
from attnprof.record.budgets import BudgetReport
from attnprof.record.compare import COLUMNS, VariantResult, fastest, result_line, workload_line
from attnprof.record.environment import Ceilings, Environment
from attnprof.record.price import Price
from attnprof.record.recommendation import Recommended
from attnprof.workload.grid import Grid
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

__all__ = ["LOST_TASK", "QUANTITIES", "Crossover", "Quantity", "RecommendRecord",
           "ScalingFit", "SweepPoint", "SweepRecord", "WorkerLimits", "needs_rerun"]

#: What a fit describes: the median latency of a step, or its peak memory.
Quantity = Literal["latency_ms", "peak_memory_bytes"]
QUANTITIES: tuple[Quantity, ...] = ("latency_ms", "peak_memory_bytes")
#: Signals another process (or a person) sends: the point said nothing about the variant.
_EXTERNAL_SIGNALS = ("SIGKILL", "SIGTERM", "SIGINT", "SIGHUP")
#: How the reason of a point whose Ray task died (its worker or node) begins.
LOST_TASK = "the Ray task was lost"


class WorkerLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What ends a point's worker besides the point itself: a time limit and a memory cap
    (``None``: none). They decide rows (``timeout``, ``oom``), so the record keeps them and
    a resumed sweep runs under the same ones."""

    #: Seconds a point's worker may run (``--point-timeout``).
    point_timeout_s: float | None = None
    #: Bytes the variants may allocate in a worker beyond what it holds when they start
    #: (``--worker-memory``).
    worker_memory_bytes: int | None = None


class SweepPoint(msgspec.Struct, kw_only=True, tag_field="target", tag="attention"):
    """One finished point: its coordinates in the grid, its workload and one row per
    variant."""

    #: Position in the grid's run order (stable across resumes).
    index: int
    #: The swept fields' values at this point (``{"seq": 1024, "mode": "forward"}``).
    coords: dict[str, int | str]
    workload: Workload
    results: list[VariantResult]
    #: Variants not run here because a smaller point ran out of memory: variant -> the
    #: index of that point.
    inferred: dict[str, int] = msgspec.field(default_factory=dict)
    elapsed_s: float = 0.0
    #: Where it ran: the Ray node id, or the host for local executors.
    node: str | None = None
    environment: Environment | None = None
    ceilings: Ceilings | None = None
    #: Bytes of the K/V cache a decode step attends over (decode points only).
    kv_cache_bytes: int | None = None

    def result(self, variant: str) -> VariantResult | None:
        """The row of ``variant`` at this point, if it has one."""
        return next((r for r in self.results if r.variant == variant), None)


class ScalingFit(msgspec.Struct, kw_only=True):
    """``quantity ≈ prefactor · field ** exponent`` for one variant, fitted by least squares
    on log-log axes over the points where every other coordinate equals ``group``."""

    variant: str
    quantity: Quantity
    field: str
    group: dict[str, int | str]
    exponent: float
    prefactor: float
    #: 95% confidence interval of the exponent (Student t); None with only two points.
    ci95: tuple[float, float] | None
    #: Coefficient of determination in log-log space; None with only two points.
    r_squared: float | None
    points: int
    #: The smallest and largest ``field`` values fitted.
    fitted_range: tuple[int, int]
    #: ``field`` values whose latency was noisy (IQR/median > 10%).
    noisy: list[int] = msgspec.field(default_factory=list)
    #: ``field`` values far off the power law through the other points.
    outliers: list[int] = msgspec.field(default_factory=list)
    #: Why the fit should not be read as a scaling law, in words (empty: no reason seen).
    caveats: list[str] = msgspec.field(default_factory=list)


class Crossover(msgspec.Struct, kw_only=True):
    """Where ``overtaker`` becomes better (lower) than ``overtaken`` in ``quantity`` as
    ``field`` grows: between two measured points, interpolated on log-log axes."""

    quantity: Quantity
    field: str
    group: dict[str, int | str]
    overtaker: str
    overtaken: str
    at: float
    between: tuple[int, int]
    #: Why the order it rests on may be noise (a noisy point, or one off its variant's
    #: fit, at either end); ``None``: none seen.
    caveat: str | None = None


class SweepRecord(RecordBase, tag="sweep", kw_only=True):
    """``attnprof sweep``: a comparison at every point of a grid."""

    environment: Environment
    #: The workload every point starts from; the grid's fields replace its values.
    base: Workload
    #: The workload fields the user set beside the grid (the base is the device's default
    #: with these applied; a resumed sweep rebuilds every point from them).
    fields: dict[str, int | str | bool] = msgspec.field(default_factory=dict)
    grid: Grid
    variants: list[str]
    settings: Settings
    flops_convention: str
    executor: str = "process"
    #: The executor's limits (``None`` in records written before they were kept).
    limits: WorkerLimits | None = None
    points: list[SweepPoint] = msgspec.field(default_factory=list)
    fits: list[ScalingFit] = msgspec.field(default_factory=list)
    crossovers: list[Crossover] = msgspec.field(default_factory=list)
    #: ``attnprof recommend``'s choice per point (``None``: none was asked for) and the
    #: larger batches it measured for the headroom (indexed after the grid's points).
    recommendation: Recommended | None = None
    batch_points: list[SweepPoint] = msgspec.field(default_factory=list)
    #: The ``--budgets`` verdict on every point's rows (``None``: no budgets were given).
    budgets: BudgetReport | None = None
    #: The machine's price the points' costs are read at (``--price``, a prices file).
    price: Price | None = None

    def ordered_points(self) -> list[SweepPoint]:
        """The points in grid order (a parallel executor appends them as they finish)."""
        return sorted(self.points, key=lambda p: p.index)

    def fit(self, variant: str, quantity: Quantity, field: str,
            group: dict[str, int | str] | None = None) -> ScalingFit | None:
        """The fit of ``variant``'s ``quantity`` against ``field`` (in ``group``, or the
        only group), if there is one."""
        for f in self.fits:
            if (f.variant, f.quantity, f.field) == (variant, quantity, field) and (
                    group is None or f.group == group):
                return f
        return None

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per point and variant,
        the comparison's columns."""
        return COLUMNS, sweep_lines(self)

    def headline(self) -> str:
        """The fastest variant per point, summarised: how often each was fastest alone,
        the points where several tie within noise, the first crossover."""
        return sweep_headline(self)

    def subject(self) -> str:
        """The base workload and the grid's fields."""
        axes = ", ".join(f"{a.field}×{len(a.values)}" for a in self.grid.axes)
        return self.base.describe() + (f" · grid {axes}" if axes else "")

    def listing(self) -> Listing:
        """How many points over which axes, from which workload; the variants."""
        axes = " × ".join(f"{a.field} {len(a.values)}" for a in self.grid.axes)
        return Listing(summary=f"{len(self.points)} points ({axes or 'one point'}) from "
                               f"{self.base.describe()}", names=tuple(self.variants))


class RecommendRecord(SweepRecord, tag="recommend", kw_only=True):
    """``attnprof recommend``: a sweep and the variant it recommends at each point (its
    ``recommendation``, set by the command). Defined beside the sweep record, as every
    kind's subkinds are beside it, so that ``SweepRecord.load`` knows it (see
    :meth:`~attnprof.record.base.RecordBase.from_json`)."""

    @classmethod
    def of_sweep(cls, sweep: SweepRecord) -> RecommendRecord:
        """``sweep``'s fields as a recommend record (its run id and times kept)."""
        return cls(**msgspec.structs.asdict(sweep))


def needs_rerun(row: VariantResult) -> bool:
    """Whether a row says nothing about its variant at that point, so ``--resume`` runs it
    again: a timeout, a worker killed by a signal someone sent (SIGKILL that was not the
    OOM killer, SIGTERM, SIGINT, SIGHUP), or a Ray task lost with its worker or node. A
    segfault, an exit code, running out of memory, a refusal or an error is the variant's
    own answer and is kept."""
    if row.status == "timeout":
        return True
    return row.status == "crashed" and (row.reason.startswith(LOST_TASK) or any(
        f"by {s} " in row.reason for s in _EXTERNAL_SIGNALS))


def sweep_headline(record: SweepRecord) -> str:
    """See :meth:`SweepRecord.headline`."""
    points = record.ordered_points()
    wins: dict[str, int] = {}
    ties: list[list[str]] = []
    empty = 0
    for point in points:
        tied, _ = fastest(point.results)
        if not tied:
            empty += 1
        elif len(tied) == 1:
            wins[tied[0].variant] = wins.get(tied[0].variant, 0) + 1
        else:
            ties.append([r.variant for r in tied])
    if not points:
        return "The sweep measured no point."
    ranked = sorted(wins.items(), key=lambda kv: -kv[1])
    said = []
    if ranked:
        (first, n), rest = ranked[0], ranked[1:]
        said.append(f"{first} is fastest at {n} of {len(points)} points"
                    + "".join(f", {v} at {k}" for v, k in rest[:4])
                    + (f" and {len(rest) - 4} more" if len(rest) > 4 else "") + ".")
    if ties:
        said.append(f"{len(ties)} point{'s' if len(ties) > 1 else ''} tie within noise "
                    f"(e.g. {' and '.join(ties[0][:3])}).")
    if empty:
        said.append(f"{empty} point{'s' if empty > 1 else ''} measured no variant cleanly.")
    if record.crossovers:
        c = record.crossovers[0]
        said.append(f"{c.overtaker} overtakes {c.overtaken} in {c.quantity} at "
                    f"{c.field} ≈ {c.at:.3g}.")
    return " ".join(said)


def sweep_lines(record: SweepRecord) -> list[dict[str, Any]]:
    """A sweep: the comparison's columns, one line per point and variant (so a sweep's
    lines and a comparison's concatenate into one table)."""
    lines = []
    for point in record.ordered_points():
        shared = workload_line(point.workload, point.environment or record.environment,
                               record.created)
        lines += [{**result_line(r), **shared} for r in point.results]
    return lines
