"""What every record kind's HTML section shares: the part every section opens with
(:func:`section_of`), and the cells and tables more than one kind shows (a comparison's
rows, expectations and budgets, an environment's facts). Each kind's own section is built
by its view (:mod:`attnprof.render.kinds`); the page model is :mod:`.page`.

Numbers are formatted as the terminal shows them (the same helpers), never recomputed:
what a cell says, the record says.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from attnprof.formatting import fmt_ms, fmt_rate, format_bytes, threads_text
from attnprof.record.budgets import BudgetReport
from attnprof.record.check import CheckRow
from attnprof.record.compare import VariantResult
from attnprof.record.environment import Environment
from attnprof.render.compare_table import row_notes, traffic_text
from attnprof.render.html.page import Cell, Section, Table, cell, num
from attnprof.render.kinds import view_of

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["add_budgets", "check_table", "comparison_table", "environment_facts",
           "error_cell", "latency_cell", "section_of", "spread_cell", "status_cell",
           "verdict"]


def section_of(record: Record, anchor: str) -> Section:
    """The section of ``record`` (already made safe to show: see ``terminal_safe``)."""
    view = view_of(record.kind)
    section = view.section(record, anchor)
    section.headline = record.headline()
    section.facts[:0] = [("kind", record.kind), ("run id", record.run_id),
                         ("created", record.created), ("status", record.status),
                         ("attnprof", record.attnprof)]
    section.figures = view.figures(record)
    return section


def environment_facts(env: Environment | None) -> list[tuple[str, str]]:
    """Where the record was made, as facts (none without an environment)."""
    if env is None:
        return []
    return [("device", f"{env.device_name} ({env.device})"), ("CPU", env.cpu_model),
            ("threads", threads_text(env.threads, env.cpus)), ("torch", env.torch),
            ("CUDA", env.cuda or "—"),
            ("python", env.python), ("platform", env.platform), ("host", env.host or "—")]


def status_cell(status: str) -> Cell:
    """A row's status, coloured by it."""
    return cell(status, f"status-{status}")


def latency_cell(row: VariantResult) -> Cell:
    """The median latency in ms, as the terminal shows it."""
    lat = row.latency_ms
    return num(lat.median if lat else None, fmt_ms(lat.median) if lat else None)


def spread_cell(row: VariantResult) -> Cell:
    """The IQR as a share of the median, marked when noisy."""
    lat = row.latency_ms
    if lat is None or lat.median <= 0:
        return num(None)
    share = lat.iqr / lat.median
    return num(share, f"{share:.1%}" + (" noisy" if lat.noisy else ""),
               "noisy" if lat.noisy else "")


def _rate(rate: float | None, share: float | None) -> Cell:
    if rate is None:
        return num(None)
    text = fmt_rate(rate) + ("" if share is None else f" ({share:.0%})")
    return num(rate, text + ("!" if share is not None and share > 1 else ""),
               "over-ceiling" if share is not None and share > 1 else "")


def error_cell(row: VariantResult) -> Cell:
    """The largest error against the reference, red beyond the tolerance."""
    if row.nonfinite_values:  # no difference describes NaN or ±Inf: the terminal's words
        return num(math.inf, "NaN/Inf", "status-error")  # sorted with the absent
    if row.max_abs_error is None:
        return num(None)
    return num(row.max_abs_error, f"{row.max_abs_error:.1e}",
               "status-error" if row.within_tolerance is False else "")


def _notes(row: VariantResult) -> str:
    """The terminal's notes (a failure's reason first, then what its kept phases measured),
    then the warnings the run caught, which the terminal leaves to the JSON."""
    return "; ".join(part for part in (row_notes(row), *row.warnings) if part)


def comparison_table(name: str, caption: str, rows: list[VariantResult]) -> Table:
    """The comparison's rows: one per variant, sortable, coloured by status, with the
    reason of every row that did not run. CPU dispatch only where CUDA events timed a row:
    on a CPU the dispatch is the step itself, and the column would repeat the median."""
    cuda = any(r.timing == "cuda-events" for r in rows)
    table = Table(name=name, caption=caption,
                  columns=["variant", "status", "median ms", "IQR",
                           *(["CPU dispatch ms"] if cuda else []),
                           "TFLOP/s (of ceiling)", "GB/s (of ceiling)", "traffic",
                           "peak memory",
                           "max error", "notes / reason"])
    for r in rows:
        dispatch = [num(r.cpu_dispatch_ms, fmt_ms(r.cpu_dispatch_ms))] if cuda else []
        table.rows.append([cell(r.variant), status_cell(r.status), latency_cell(r),
                           spread_cell(r), *dispatch,
                           _rate(r.tflops_per_s, r.flops_of_ceiling),
                           _rate(r.gbytes_per_s, r.bandwidth_of_ceiling),
                           num(r.traffic_bytes, traffic_text(r)),
                           num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
                           error_cell(r), cell(_notes(r))])
        table.row_css.append(f"row-{r.status}")
    return table


def check_table(name: str, caption: str, rows: list[CheckRow]) -> Table:
    """Expectations (or budgets) against what was observed, one row each."""
    table = Table(name=name, caption=caption,
                  columns=["", "what", "expected", "observed", "evidence / margin"])
    for r in rows:
        table.rows.append([cell("✓" if r.ok else "✗", "status-ok" if r.ok else "status-error"),
                           cell(r.what), cell(r.expected), cell(r.observed), cell(r.detail)])
        table.row_css.append("row-ok" if r.ok else "row-error")
    return table


def verdict(rows: list[CheckRow], what: str) -> tuple[str, str]:
    """The section's verdict on ``rows``: how many did not hold, or that all did."""
    bad = sum(not r.ok for r in rows)
    if bad:
        return "status-error", f"{bad} of {len(rows)} {what} did not hold"
    return "status-ok", f"all {len(rows)} {what} hold"


def add_budgets(section: Section, budgets: BudgetReport | None, anchor: str) -> None:
    """A record's budgets verdict (when it has one): their table, what selected nothing,
    and the section's verdict."""
    if budgets is None:
        return
    section.tables.append(check_table(f"{anchor}-budgets",
                                      f"budgets — {budgets.title or budgets.source}",
                                      budgets.rows))
    section.tables[-1].notes += [f"budget #{u.number} ({u.description}) selects nothing this "
                                 "run measured: not checked" for u in budgets.unmatched]
    section.verdict = verdict(budgets.rows, "budget checks")
