"""Budgets against measurements: a pure pass from a budgets file and a record to verdicts.

Every budget is checked at every measured (workload, variant) it selects. A row that did
not run (``oom``, ``crashed``, ``skipped``, ...) fails every budget that selects it — a
budget is a promise that the variant runs there — and so does a bounded quantity the run
did not measure. A failure says by how much (``24% over (+1.2 ms)``). A budget that selects
nothing in this record is reported as not checked; it fails nothing, since one budgets file
usually covers more shapes than one run measures.
"""

from __future__ import annotations

from collections.abc import Iterable

from attnprof.record.budgets import BudgetReport, UnmatchedBudget
from attnprof.record.check import CheckRow
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.record.sweep import SweepRecord
from attnprof.workload.budgets import METRICS, Budgets
from attnprof.workload.expectations import Bound
from attnprof.workload.problem import Workload

__all__ = ["BudgetReport", "check_budgets", "measured_rows", "metric_value"]

_MIB = float(1 << 20)


def measured_rows(record: CompareRecord | SweepRecord) -> list[tuple[Workload, VariantResult]]:
    """Every (workload, row) a record measured: a comparison's rows, or every sweep point's."""
    if isinstance(record, SweepRecord):
        return [(p.workload, r) for p in record.ordered_points() for r in p.results]
    return [(record.workload, r) for r in record.results]


def metric_value(row: VariantResult, metric: str) -> float | None:
    """The measured value a budget's ``metric`` bounds (``None`` when not measured)."""
    if metric == "latency_ms":
        return row.latency_ms.median if row.latency_ms else None
    if metric == "peak_memory_mib":
        return row.peak_memory_bytes / _MIB if row.peak_memory_bytes is not None else None
    if metric == "max_abs_error":
        return row.max_abs_error
    if metric == "tflops_share":
        return row.flops_of_ceiling
    raise ValueError(f"unknown budget metric {metric!r}")


def check_budgets(budgets: Budgets, measured: Iterable[tuple[Workload, VariantResult]],
                  source: str = "") -> BudgetReport:
    """Check each budget at every measured row it selects (see the module doc); ``source``
    names the budgets file in the report."""
    pairs = list(measured)
    rows: list[CheckRow] = []
    unmatched = []
    for number, budget in enumerate(budgets.budget, start=1):
        selected = [(w, r) for w, r in pairs if budget.applies_to(r.variant, w)]
        if not selected:
            unmatched.append(UnmatchedBudget(number=number, description=budget.describe()))
        for workload, row in selected:
            for metric, bound in budget.bounds():
                rows.append(_check(number, workload, row, metric, bound))
    return BudgetReport(rows=rows, unmatched=unmatched, title=budgets.title, source=source)


def _check(number: int, workload: Workload, row: VariantResult, metric: str,
           bound: Bound) -> CheckRow:
    unit = METRICS[metric][0]
    what = f"#{number} {row.variant} · {workload.describe()}"
    expected = f"{metric} {bound.describe(unit)}"
    if row.status != "ok":
        return CheckRow(what, expected, row.status, False, row.reason)
    value = metric_value(row, metric)
    if value is None:
        return CheckRow(what, expected, "not measured", False,
                        "this run did not measure it" + (
                            " (ceilings not measured)" if metric == "tflops_share" else ""))
    observed = f"{value:.4g}{' ' + unit if unit else ''}"
    if bound.holds(value):
        return CheckRow(what, expected, observed, True, _margin(value, bound, unit))
    return CheckRow(what, expected, observed, False, _excess(value, bound, unit))


def _excess(value: float, bound: Bound, unit: str) -> str:
    """By how much ``value`` breaks ``bound``: ``24% over (+1.2 ms)``."""
    u = f" {unit}" if unit else ""
    limit, word = ((bound.max, "over") if bound.max is not None and value > bound.max
                   else (bound.min, "under") if bound.min is not None and value < bound.min
                   else (bound.count, "off"))
    assert limit is not None
    diff = value - limit
    if not limit:
        return f"{diff:+.3g}{u}"
    if value / limit >= 2:  # "11984227% over" reads worse than "119842× the max"
        return f"{value / limit:.3g}× the {'max' if word == 'over' else 'limit'} ({diff:+.3g}{u})"
    return f"{abs(diff) / limit:.0%} {word} ({diff:+.3g}{u})"


def _margin(value: float, bound: Bound, unit: str) -> str:
    """How much room is left: ``18% under the max (-0.9 ms)``."""
    u = f" {unit}" if unit else ""
    if bound.max is not None and bound.max > 0:
        return f"{(bound.max - value) / bound.max:.0%} below the max ({value - bound.max:+.3g}{u})"
    if bound.min is not None and bound.min > 0:
        return f"{(value - bound.min) / bound.min:.0%} above the min ({value - bound.min:+.3g}{u})"
    return ""
