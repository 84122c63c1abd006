"""The comparison record: one workload, one row per attention variant.

A :class:`CompareRecord` (kind ``compare``) holds the environment, the typed workload and
settings, this machine's ceilings and one :class:`VariantResult` per variant, raw samples
kept. ``attnprof profile`` writes the same shape as kind ``profile``
(:class:`ProfileRecord`), every row carrying the analysis of its trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from attnprof.noise import TIE, differ, relative_iqr
from attnprof.record.base import Listing, RecordBase
from attnprof.record.budgets import BudgetReport
from attnprof.record.environment import Ceilings, Environment
from attnprof.record.finding import top_finding
from attnprof.record.price import Price
from attnprof.record.trace_report import TraceReport
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings

__all__ = ["STATUSES", "Bytes", "CompareRecord", "Latency", "Milliseconds", "ProfileRecord",
           "RunRecord", "Status", "VariantResult", "fastest", "rows_headline"]

#: ``ok``: measured. ``wrong``: measured, but its output is off the float64 reference by
#: more than the dtype's tolerance, or holds NaN or ±Inf (never recommended; fails every
#: budget). ``unsupported``: refused (PyTorch's reason). ``oom``: ran out of memory, or
#: would certainly have. ``error``: raised. ``crashed``: killed the worker process running
#: it (signal or exit code in the reason). ``timeout``: ran past its time limit.
#: ``skipped``: not run, because the reason says it could not have succeeded. A row that
#: failed after some of its phases finished keeps what they measured (its latency, say),
#: and its notes say what was kept and what was not taken.
Status = Literal["ok", "wrong", "unsupported", "error", "oom", "crashed", "timeout",
                 "skipped"]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]
#: A duration or a size, never below zero: a record (hand-edited, say) with a negative
#: one is refused when it is read, not diffed into "-11146340%".
Milliseconds = Annotated[float, msgspec.Meta(ge=0)]
Bytes = Annotated[int, msgspec.Meta(ge=0)]


class Latency(msgspec.Struct, kw_only=True):
    """Summary of raw latency samples in milliseconds, with the samples themselves."""

    median: Milliseconds
    iqr: Milliseconds
    q1: Milliseconds
    q3: Milliseconds
    min: Milliseconds
    max: Milliseconds
    count: int
    noisy: bool
    samples: list[Milliseconds]
    #: Each process's own median, in the order the processes ran, when the comparison was
    #: measured in several (``--processes``; empty: one). ``samples`` are all of theirs,
    #: and the statistics above summarise them together.
    process_medians: list[Milliseconds] = msgspec.field(default_factory=list)


class VariantResult(msgspec.Struct, kw_only=True):
    """Everything measured for one variant; fields are ``None`` when not measured."""

    variant: str
    family: str
    status: Status
    reason: str = ""
    summary: str = ""
    latency_ms: Latency | None = None
    #: "wall" (CPU: perf_counter around the call) or "cuda-events" (device time).
    timing: str | None = None
    cpu_dispatch_ms: Milliseconds | None = None
    device_ms: Milliseconds | None = None
    compile_time_s: float | None = None
    first_call_s: float | None = None
    peak_memory_bytes: Bytes | None = None
    peak_memory_method: str | None = None
    #: Minor page faults per timed call (getrusage around the samples): memory touched for
    #: the first time each call, which depends on the allocator state (settings).
    minor_faults_per_call: float | None = None
    flops: float | None = None
    flops_convention: str | None = None
    tflops_per_s: float | None = None
    #: The I/O floor: bytes any variant must move (q, k, v read, out written once; the
    #: gradients in training), :func:`attnprof.workload.costs.step_bytes`.
    bytes_moved: float | None = None
    #: Traffic: the bytes this variant's operators read and wrote in one step, modelled
    #: from the shapes and dtypes the profiler recorded for each op
    #: (:mod:`attnprof.knowledge.op_traffic`); ``None`` when not modelled.
    traffic_bytes: float | None = None
    #: Leaf ops the traffic counts, and of them those whose output size was assumed.
    traffic_ops: int | None = None
    traffic_assumed_ops: int | None = None
    #: Bytes per second over ``gbytes_basis``: ``traffic``, or the ``I/O floor`` when the
    #: traffic was not modelled.
    gbytes_per_s: float | None = None
    gbytes_basis: str | None = None
    #: The roofline's verdict at the variant's intensity (FLOPs over traffic) against
    #: this machine's ceilings: ``memory`` or ``compute`` (``None``: not known).
    bound_by: str | None = None
    #: tflops_per_s and gbytes_per_s as shares of this machine's measured ceilings (0-1).
    flops_of_ceiling: float | None = None
    bandwidth_of_ceiling: float | None = None
    #: max |out − float64 reference|; ``None`` when not checked, or when the output holds
    #: values no difference describes (``nonfinite_values`` counts them).
    max_abs_error: float | None = None
    #: Output values that are NaN or ±Inf (``None``: the output was not checked).
    nonfinite_values: int | None = None
    tolerance: float | None = None
    within_tolerance: bool | None = None
    sdpa_backend: str | None = None
    ops: list[str] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    trace: str | None = None
    #: The analysis of ``trace``, made as soon as the trace was written.
    analysis: TraceReport | None = None


class PaddingWaste(msgspec.Struct, kw_only=True):
    """What a padded batch (``--mask padding``) spends on its padding.

    FLOPs: the pairs a padded call computes (every row at ``--seq``, under the same causal
    rule) against those on real tokens, both counted exactly. Time: the padded baseline's
    median against the unpadded total, measured by ``unpadded_variant`` (``None`` when it
    did not run ``ok``; then ``note`` says how to measure it).
    """

    lengths: list[int]
    real_tokens: int
    padded_tokens: int
    padded_flops: float
    useful_flops: float
    flops_share: float
    padded_variant: str | None = None
    padded_ms: float | None = None
    unpadded_variant: str | None = None
    unpadded_ms: float | None = None
    #: ``padded_ms - unpadded_ms`` and its share of ``padded_ms`` (negative: padding was
    #: cheaper than the unpadded calls, which happens at small sizes).
    time_ms: float | None = None
    time_share: float | None = None
    method: str = ""
    note: str = ""


_WORKLOAD = ("batch", "heads", "kv_heads", "seq", "kv_seq", "head_dim", "dtype", "device",
             "causal", "mode", "mask")
_RESULT = ("variant", "status", "median_ms", "iqr_ms", "noisy", "samples", "cpu_dispatch_ms",
           "device_ms", "compile_time_s", "tflops_per_s", "flops_of_ceiling", "gbytes_per_s",
           "bandwidth_of_ceiling", "traffic_bytes", "bound_by", "peak_memory_bytes",
           "minor_faults_per_call",
           "max_abs_error", "nonfinite_values", "within_tolerance",
           "sdpa_backend", "reason")
#: The comparison header, in order: the variant's fields, then the workload's, then the
#: machine and the run.
COLUMNS: tuple[str, ...] = (*_RESULT, *_WORKLOAD, "device_name", "torch", "created")


class CompareRecord(RecordBase, tag="compare"):
    """One comparison run: every variant measured on one workload."""

    environment: Environment
    workload: Workload
    settings: Settings
    flops_convention: str
    results: list[VariantResult] = msgspec.field(default_factory=list)
    ceilings: Ceilings | None = None
    #: The ``--budgets`` verdict on the rows (``None``: no budgets were given).
    budgets: BudgetReport | None = None
    #: What padding cost (``--mask padding`` only): :mod:`attnprof.run.padding`.
    padding_waste: PaddingWaste | None = None
    #: The machine's price the rows' costs are read at (``--price``, a prices file).
    price: Price | None = None

    def workload_spec(self) -> Workload:
        """The :class:`Workload` this record measured (kv_heads and kv_seq spelled out)."""
        return self.workload

    def result(self, variant: str) -> VariantResult:
        """The result row for ``variant`` (``KeyError`` if it was not run)."""
        for r in self.results:
            if r.variant == variant:
                return r
        raise KeyError(variant)

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per variant."""
        return COLUMNS, compare_lines(self)

    def headline(self) -> str:
        """The fastest variant and by how much, its memory and error beside it."""
        return rows_headline(self.results)

    def subject(self) -> str:
        """The workload, in one line."""
        return self.workload.describe()

    def listing(self) -> Listing:
        """The workload, and the variants measured."""
        return Listing(summary=self.workload.describe(),
                       names=tuple(r.variant for r in self.results))


class ProfileRecord(CompareRecord, tag="profile"):
    """``attnprof profile``: a comparison whose every row carries its trace's analysis."""

    def headline(self) -> str:
        """The comparison's headline, then the most severe finding of the traces."""
        found = top_finding([(r.variant, f) for r in self.results if r.analysis
                             for f in r.analysis.findings])
        return rows_headline(self.results) + (f" {found}" if found else "")


def _median(r: VariantResult) -> float:
    assert r.latency_ms is not None
    return r.latency_ms.median


def _spread(r: VariantResult) -> float:
    assert r.latency_ms is not None
    return relative_iqr(r.latency_ms.median, r.latency_ms.iqr)


def fastest(results: Sequence[VariantResult]) -> tuple[list[VariantResult], list[VariantResult]]:
    """The measured rows tied for fastest (the fastest first, then each whose median does
    not differ from its beyond the noise: :func:`attnprof.noise.differ` on the medians and
    their relative IQRs), and the measured rows slower beyond the noise."""
    measured = sorted((r for r in results if r.status == "ok" and r.latency_ms is not None
                       and r.latency_ms.median > 0), key=_median)
    if not measured:
        return [], []
    best = measured[0]
    tied = [r for r in measured if r is best or not differ(
        _median(best), _median(r), _spread(best), _spread(r))]
    return tied, [r for r in measured if r not in tied]


def _ms(value: float) -> str:
    return f"{value:.3g} ms"


def _times(ratio: float) -> str:
    return f"{ratio:.1f}×" if ratio < 10 else f"{ratio:.0f}×"


def _memory(best: VariantResult, base: VariantResult) -> str:
    a, b = best.peak_memory_bytes, base.peak_memory_bytes
    if not a or not b:
        return ""
    if abs(b / a - 1) <= TIE:
        return "the same peak memory"
    return (f"{_times(b / a)} less peak memory" if b > a
            else f"{_times(a / b)} more peak memory")


def _error(best: VariantResult, base: VariantResult) -> str:
    a, b = best.max_abs_error, base.max_abs_error
    if a is None or b is None:
        return ""
    within = "within tolerance " if best.within_tolerance and base.within_tolerance else ""
    return f"error {within}({a:.1g} vs {b:.1g})"


def rows_headline(results: Sequence[VariantResult]) -> str:
    """A comparison's answer: the fastest variant (or the variants tied for it) and by how
    much against the naive baseline when measured, else the slowest; its peak memory and
    error beside; the rows that did not run cleanly named."""
    tied, slower = fastest(results)
    failed = [r for r in results if r.status != "ok"]
    tail = ("" if not failed else " " + (", ".join(f"{r.variant}: {r.status}"
                                                   for r in failed[:6])
                                         + (f" and {len(failed) - 6} more" if len(failed) > 6
                                            else "") + "."))
    if not tied:
        return f"No variant was measured cleanly.{tail}"
    best = tied[0]
    if not slower:
        if len(tied) == 1:
            return f"{best.variant}: {_ms(_median(best))}, the only variant measured.{tail}"
        return (f"All {len(tied)} measured variants tie within noise "
                f"({_ms(_median(tied[0]))} to {_ms(_median(tied[-1]))}).{tail}")
    names = [r.variant for r in tied]
    lead = (f"{best.variant} is fastest" if len(tied) == 1 else
            f"{', '.join(names[:-1])} and {names[-1]} tie for fastest (within noise)")
    base = next((r for r in slower if r.variant == "naive"), slower[-1])
    said = (f"{lead} at {_ms(_median(best))}: {_times(_median(base) / _median(best))} "
            f"faster than {base.variant} ({_ms(_median(base))})")
    beside = [x for x in (_memory(best, base), _error(best, base)) if x]
    return said + (", " + ", ".join(beside) if beside else "") + "." + tail


#: The name the Python API has always used for a comparison's record.
RunRecord = CompareRecord


def compare_lines(record: CompareRecord) -> list[dict[str, Any]]:
    """A comparison: one line per variant."""
    shared = workload_line(record.workload, record.environment, record.created)
    return [{**result_line(r), **shared} for r in record.results]


def workload_line(workload: Workload, environment: Environment, created: str) -> dict[str, Any]:
    """A comparison line's workload, machine and run columns."""
    shared: dict[str, Any] = {k: getattr(workload, k) for k in _WORKLOAD}
    shared["mask"] = workload.mask_label  # "causal" for records from before --mask
    shared.update(device_name=environment.device_name, torch=environment.torch,
                  created=created)
    return shared


def result_line(r: VariantResult) -> dict[str, Any]:
    """A comparison line's variant columns."""
    lat = r.latency_ms
    row: dict[str, Any] = {k: getattr(r, k) for k in _RESULT if hasattr(r, k)}
    row.update(median_ms=lat.median if lat else None, iqr_ms=lat.iqr if lat else None,
               noisy=lat.noisy if lat else None, samples=lat.count if lat else None)
    return row
