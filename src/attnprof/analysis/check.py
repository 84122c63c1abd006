"""Expected vs observed: a pure pass from an expectations file and a trace report to rows.

Each row is one stated expectation, what the trace (or the measurement) showed, and whether
it held. A mismatch is the finding — "state what you expect to see, then look".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attnprof.errors import UsageError
from attnprof.knowledge.annotations import REGION_PREFIX, region_name
from attnprof.record.check import CheckRow
from attnprof.record.trace_report import RegionReport, TraceReport
from attnprof.workload.expectations import Bound, Expectations, PatternBound

_MIB = float(1 << 20)


@dataclass(frozen=True)
class Measured:
    """Numbers measured outside the trace (a compare/profile run), preferred when present."""

    latency_ms: float | None = None
    peak_memory_bytes: int | None = None


def pick_region(report: TraceReport, wanted: str | None) -> RegionReport:
    """The region an expectations file talks about.

    ``wanted`` may be the full region name or a variant name (``sdpa-flash`` for
    ``attnprof::sdpa-flash``). Without it, the trace must have one attnprof region (or one
    region at all); otherwise the choice is the user's, and the error lists the candidates.
    """
    regions = report.regions
    if wanted:
        for r in regions:
            if r.name in (wanted, region_name(wanted)):
                return r
        names = ", ".join(r.name for r in regions) or "none"
        raise UsageError(f"region {wanted!r} is not in {report.source} (regions: {names}); "
                         "fix 'region' in the expectations file")
    ours = [r for r in regions if r.name.startswith(REGION_PREFIX)] or regions
    if len(ours) == 1:
        return ours[0]
    names = ", ".join(r.name for r in ours) or "none"
    raise UsageError(f"{report.source} has several regions ({names}); set region = \"...\" "
                     "in the expectations file")


def check_expectations(exp: Expectations, region: RegionReport,
                       measured: Measured | None = None) -> list[CheckRow]:
    """Compare every expectation in ``exp`` with ``region`` (and ``measured`` numbers)."""
    measured = measured or Measured()
    rows: list[CheckRow] = []
    pf = exp.per_forward
    unit = "kernels" if region.kernel_source == "kernels" else "compute ops"
    if pf.kernels is not None:
        rows.append(_bound_row(f"{unit} per forward", pf.kernels, region.kernels_per_forward))
    if pf.latency_ms is not None:
        rows.append(_latency_row(pf.latency_ms, region, measured))
    if pf.peak_memory_mib is not None:
        rows.append(_memory_row(pf.peak_memory_mib, region, measured))
    if pf.attention_share is not None:
        if region.attention_share is None:
            rows.append(CheckRow("attention share", pf.attention_share.describe(),
                                 "no work in the region", False, ""))
        else:
            inferred = region.attention is not None and region.attention.inferred
            rows.append(_bound_row("attention share", pf.attention_share,
                                   round(region.attention_share, 4), "",
                                   "the attention time, forward + backward"
                                   + ("; hand-written attention inferred from its pattern"
                                      if inferred else "")))
    names = [(k.name, k.short, k.per_forward) for k in region.kernels]
    for bound in exp.kernel:
        rows.append(_pattern_row("kernel" if region.kernel_source == "kernels" else "compute op",
                                 bound, names))
    ops = [(o.name, o.name, o.per_forward) for o in region.ops]
    for bound in exp.op:
        rows.append(_pattern_row("op", bound, ops))
    return rows


def _bound_row(what: str, bound: Bound, value: float, unit: str = "",
               source: str = "") -> CheckRow:
    shown = f"{value:g}" + (f" {unit}" if unit else "")
    return CheckRow(what, bound.describe(unit), shown, bound.holds(value), source)


def _latency_row(bound: Bound, region: RegionReport, measured: Measured) -> CheckRow:
    if measured.latency_ms is not None:
        return _bound_row("latency per forward", bound, round(measured.latency_ms, 4), "ms",
                          "measured median")
    if region.device_us_per_forward is not None:
        value, source = region.device_us_per_forward, "device busy time in the trace"
    else:
        value, source = region.cpu_us_per_forward, "CPU time of the region in the trace"
    return _bound_row("latency per forward", bound, round(value / 1e3, 4), "ms", source)


def _memory_row(bound: Bound, region: RegionReport, measured: Measured) -> CheckRow:
    if measured.peak_memory_bytes is not None:
        value, source = measured.peak_memory_bytes, "measured peak"
    elif region.peak_memory_bytes is not None:
        value, source = region.peak_memory_bytes, "allocation events in the trace"
    else:
        return CheckRow("peak memory", bound.describe("MiB"), "not in the trace", False,
                        "capture with profile_memory=True to check memory")
    return _bound_row("peak memory", bound, round(value / _MIB, 3), "MiB", source)


def _pattern_row(kind: str, bound: PatternBound,
                 names: list[tuple[str, str, float]]) -> CheckRow:
    rx = re.compile(bound.match)
    hits = [(name, per) for name, short, per in names if rx.search(name) or rx.search(short)]
    total = sum(per for _, per in hits)
    shown = ", ".join(f"{_clip(n)} ×{per:g}" for n, per in hits[:4])
    if len(hits) > 4:
        shown += f", … ({len(hits)} names)"
    return CheckRow(f"{kind} /{bound.match}/ per forward", bound.describe(), f"{total:g}",
                    bound.holds(total), shown or "no match")


def _clip(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
