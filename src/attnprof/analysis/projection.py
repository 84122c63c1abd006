"""What a measured row would take on other hardware: bounds, projections and memory fit.

Three kinds of figure, never confused (docs/cost.md):

* a **measurement** is what a record holds: time taken on the machine that ran it;
* a **bound** is the least time the row's work can take on a target, from its FLOPs and
  the bytes its operators read and wrote (the record's per-variant traffic model):
  ``max(FLOPs / peak FLOP/s for the dtype, traffic / memory bandwidth)``. It assumes every
  FLOP at the datasheet's dense peak, every byte at peak bandwidth, compute and memory
  fully overlapped, no launch or host overhead, and the same operators (hence the same
  traffic) on the target as here. Real runs are slower, never faster — a test checks that
  on this machine's own measured ceilings;
* a **projection** is a bound divided by the fraction of its bound a measurement of the
  same variant reached on a device of the same family (``bound there / measured there``):
  an efficiency borrowed from a real run, so only as good as the kinship of the devices.

Memory: the row's measured peak (the step's own tensors, inputs excluded: the
:mod:`~attnprof.analysis.memory_fit` definition ``limits`` uses) is split into its floor
(output and, in training, gradients: linear in seq) and the rest, which grows with seq
squared for a variant that materialises the scores and linearly otherwise. The largest
sequence that fits a target is found on that estimate at ``limits``' granularity.

Pure: every function takes figures and returns figures; nothing is measured here.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnprof.knowledge.devices import Device
from attnprof.record.compare import VariantResult
from attnprof.record.environment import Ceilings
from attnprof.workload import costs
from attnprof.workload.problem import Workload

__all__ = ["ASSUMPTIONS", "SEQ_LIMIT", "SEQ_STEP", "Bound", "MemoryFit", "RowProjection", "Target",
           "bound_of", "device_target", "estimated_peak_bytes", "largest_fitting_seq",
           "machine_target", "own_efficiency", "project_record", "project_row", "row_bound",
           "row_bytes"]

#: What every bound assumes, printed under each table of them.
ASSUMPTIONS = ("bound = max(FLOPs / peak FLOP/s for the dtype, traffic / memory bandwidth): "
               "dense datasheet peak (no sparsity), peak bandwidth, compute and memory "
               "overlapped, no launch or host overhead, the same operators (so the same "
               "traffic) as measured; real runs take longer, never less")
#: The granularity of the largest-sequence search: ``limits``' default --step for seq.
SEQ_STEP = 64
#: Where the search stops: 4M tokens, beyond any context a step of attention is run at.
SEQ_LIMIT = 1 << 22


@dataclass(frozen=True)
class Target:
    """Where to bound: a device from the table, or this machine from its measured
    ceilings. ``peak_flops_per_s`` is ``None`` when there is no figure for the dtype
    (``why_no_peak`` says why)."""

    name: str
    family: str
    peak_flops_per_s: float | None
    bandwidth_bytes_per_s: float
    memory_bytes: int | None
    why_no_peak: str = ""


def device_target(device: Device, dtype: str) -> Target:
    """A table device as a target for ``dtype`` work."""
    return Target(device.name, device.family, device.peak_flops_per_s(dtype),
                  device.bandwidth_bytes_per_s, device.memory_bytes,
                  "" if device.peak_flops_per_s(dtype) else device.why_missing(dtype))


def machine_target(ceilings: Ceilings, name: str = "this machine",
                   memory_bytes: int | None = None) -> Target:
    """The machine that measured a record, from the ceilings it measured (in the record's
    dtype): what no kernel here beats, rather than a datasheet's figure."""
    return Target(name, "measured", ceilings.matmul_tflops_per_s * 1e12,
                  ceilings.bandwidth_gbytes_per_s * 1e9, memory_bytes)


@dataclass(frozen=True)
class Bound:
    """A roofline bound in seconds, its two roofs, and which one decides it."""

    seconds: float
    compute_s: float
    memory_s: float
    #: What the memory roof's bytes are: the row's modelled ``traffic``, or the ``I/O
    #: floor`` (q, k, v read and out written once) for a record without traffic: the least
    #: any variant moves, so still a bound, a looser one.
    bytes_basis: str = "traffic"

    @property
    def limited_by(self) -> str:
        """``compute`` or ``memory``: the larger roof."""
        return "compute" if self.compute_s >= self.memory_s else "memory"


def bound_of(flops: float | None, traffic_bytes: float | None, target: Target,
             bytes_basis: str = "traffic") -> Bound | None:
    """The bound of ``flops`` and ``traffic_bytes`` on ``target``, or ``None`` when either
    is unknown or the target has no peak for the dtype."""
    if flops is None or traffic_bytes is None or target.peak_flops_per_s is None:
        return None
    compute = flops / target.peak_flops_per_s
    memory = traffic_bytes / target.bandwidth_bytes_per_s
    return Bound(max(compute, memory), compute, memory, bytes_basis)


def row_bytes(row: VariantResult, workload: Workload) -> tuple[float | None, str]:
    """The bytes a row's memory roof is computed on, and what they are: its modelled
    traffic, else (a record from before traffic was modelled) the I/O floor it keeps or
    the workload's: the least any variant moves, so the bound stays a bound."""
    if row.traffic_bytes is not None:
        return row.traffic_bytes, "traffic"
    floor = row.bytes_moved if row.bytes_moved is not None else costs.step_bytes(workload)
    return floor, "I/O floor"


def row_bound(row: VariantResult, workload: Workload, target: Target) -> Bound | None:
    """:func:`bound_of` ``row``'s FLOPs and :func:`row_bytes` on ``target``."""
    moved, basis = row_bytes(row, workload)
    return bound_of(row.flops, moved, target, basis)


@dataclass(frozen=True)
class MemoryFit:
    """The estimated peak at the record's shape on the target, and the largest sequence
    (a multiple of :data:`SEQ_STEP`) whose estimated peak fits the target's memory."""

    scaling: str  # "quadratic" or "linear" in seq
    largest_seq: int | None  # None: not even SEQ_STEP fits, or not estimable
    #: The search stopped at :data:`SEQ_LIMIT` still fitting: the largest is at least that.
    at_limit: bool = False


@dataclass(frozen=True)
class RowProjection:
    """One row on one target."""

    variant: str
    target: str
    bound: Bound | None
    #: Why there is no bound (no FLOPs, no traffic, no peak for the dtype).
    no_bound: str = ""
    projection_s: float | None = None
    #: Where the projection's efficiency came from, or why there is none.
    projection_note: str = ""
    memory: MemoryFit | None = None


def estimated_peak_bytes(row_peak: int, workload: Workload, seq: int,
                         quadratic: bool) -> float:
    """The row's measured peak at ``workload`` scaled to ``seq``: its floor (output and
    gradients, linear in seq) recomputed at ``seq``, the rest scaled by the seq ratio
    squared (``quadratic``: the variant materialises the scores) or by the ratio."""
    floor = costs.step_floor_bytes(workload)
    rest = max(row_peak - floor, 0)
    ratio = seq / workload.seq
    return costs.step_floor_bytes(workload.replace(seq=seq)) + rest * (
        ratio * ratio if quadratic else ratio)


def largest_fitting_seq(row_peak: int, workload: Workload, memory_bytes: int,
                        quadratic: bool, step: int = SEQ_STEP,
                        limit: int = SEQ_LIMIT) -> int | None:
    """The largest multiple of ``step`` (up to ``limit``) whose estimated peak is at most
    ``memory_bytes`` (the estimate grows with seq, so a bisection finds it)."""
    def fits(n: int) -> bool:
        return estimated_peak_bytes(row_peak, workload, n * step, quadratic) <= memory_bytes

    if not fits(1):
        return None
    low, high = 1, limit // step
    if fits(high):
        return high * step
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            low = mid
        else:
            high = mid
    return low * step


def project_row(row: VariantResult, workload: Workload, target: Target, *,
                quadratic: bool | None, efficiency: float | None = None,
                efficiency_source: str = "") -> RowProjection:
    """``row`` of a record measured at ``workload`` on ``target``.

    ``quadratic``: whether the variant's memory grows with seq squared (``None``: unknown,
    no memory estimate). ``efficiency``: the fraction of its bound a same-family device's
    measurement of this variant reached (``None``: none; ``efficiency_source`` says why,
    or where it came from)."""
    bound = row_bound(row, workload, target)
    no_bound = ""
    if bound is None:
        no_bound = (target.why_no_peak if target.peak_flops_per_s is None
                    else "the row has no FLOPs")
    projection = None
    if bound is not None and efficiency is not None and 0 < efficiency <= 1:
        projection = bound.seconds / efficiency
    memory = None
    if quadratic is not None and row.peak_memory_bytes is not None \
            and target.memory_bytes is not None and row.status == "ok":
        largest = largest_fitting_seq(row.peak_memory_bytes, workload, target.memory_bytes,
                                      quadratic)
        memory = MemoryFit("quadratic" if quadratic else "linear", largest,
                           at_limit=largest == SEQ_LIMIT)
    return RowProjection(row.variant, target.name, bound, no_bound, projection,
                         efficiency_source, memory)


def own_efficiency(row: VariantResult, workload: Workload,
                   measured_on: Target | None) -> float | None:
    """The fraction of its bound ``row`` reached on the device that measured it
    (``bound / measured``, 0-1), or ``None`` when the device is not in the table or the
    row has no bound or latency."""
    if measured_on is None or row.status != "ok" or row.latency_ms is None:
        return None
    bound = row_bound(row, workload, measured_on)
    measured_s = row.latency_ms.median / 1e3
    if bound is None or measured_s <= 0:
        return None
    return min(bound.seconds / measured_s, 1.0)


def project_record(rows: list[VariantResult], workload: Workload, targets: list[Target],
                   quadratic: dict[str, bool | None],
                   measured_on: Target | None) -> list[RowProjection]:
    """Every row on every target, row by row. ``measured_on``: the table's device the rows
    were measured on (``None``: not a table device, so no projection is made);
    ``quadratic``: per variant, whether its memory grows with seq squared."""
    found = []
    for row in rows:
        efficiency = own_efficiency(row, workload, measured_on)
        for target in targets:
            if measured_on is None:
                source = "no projection: the rows were not measured on a device in the table"
            elif measured_on.family != target.family:
                source = (f"no projection: measured on {measured_on.name} "
                          f"({measured_on.family}), not a {target.family} device")
            elif efficiency is None:
                source = "no projection: the row has no bound or no latency where measured"
            else:
                source = (f"projection: {efficiency:.0%} of its bound, as measured on "
                          f"{measured_on.name}")
            same = measured_on is not None and measured_on.family == target.family
            found.append(project_row(row, workload, target,
                                     quadratic=quadratic.get(row.variant),
                                     efficiency=efficiency if same else None,
                                     efficiency_source=source))
    return found
