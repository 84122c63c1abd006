"""Each record kind as a section of the HTML report (see :mod:`attnprof.render.html.page`).

Numbers are formatted as the terminal shows them (the same helpers), never recomputed:
what a cell says, the record says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from attnprof.formatting import counted, format_bytes, threads_text
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.budgets import BudgetReport
from attnprof.record.check import CheckRecord, CheckRow
from attnprof.record.compare import CompareRecord, ProfileRecord, VariantResult
from attnprof.record.diff import DiffRecord
from attnprof.record.environment import Environment
from attnprof.record.family import Record
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.recommend import RecommendRecord
from attnprof.record.sweep import SweepRecord
from attnprof.render.compare_table import (
    fmt_ms,
    fmt_rate,
    io_floor_line,
    row_notes,
    traffic_text,
)
from attnprof.render.figures import figures_of
from attnprof.render.html.family import diff_section, ranks_section
from attnprof.render.html.page import Cell, Section, Table, TraceLink, cell, num
from attnprof.render.html.trace import trace_section
from attnprof.render.sweep_table import describe_fit

__all__ = ["section_of"]


def section_of(record: Record, anchor: str) -> Section:
    """The section of ``record`` (already made safe to show: see ``terminal_safe``)."""
    for kind in type(record).__mro__:
        if kind in _BUILDERS:
            section = _BUILDERS[kind](record, anchor)
            section.headline = record.headline()
            section.facts[:0] = [("kind", record.kind), ("run id", record.run_id),
                                 ("created", record.created), ("status", record.status),
                                 ("attnprof", record.attnprof)]
            section.figures = figures_of(record)
            return section
    raise TypeError(f"no HTML view of {type(record).__name__}")


def _environment(env: Environment | None) -> list[tuple[str, str]]:
    if env is None:
        return []
    return [("device", f"{env.device_name} ({env.device})"), ("CPU", env.cpu_model),
            ("threads", threads_text(env.threads, env.cpus)), ("torch", env.torch),
            ("CUDA", env.cuda or "—"),
            ("python", env.python), ("platform", env.platform), ("host", env.host or "—")]


def _status(status: str) -> Cell:
    return cell(status, f"status-{status}")


def _latency(row: VariantResult) -> Cell:
    lat = row.latency_ms
    return num(lat.median if lat else None, fmt_ms(lat.median) if lat else None)


def _spread(row: VariantResult) -> Cell:
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


def _error(row: VariantResult) -> Cell:
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
        table.rows.append([cell(r.variant), _status(r.status), _latency(r), _spread(r),
                           *dispatch,
                           _rate(r.tflops_per_s, r.flops_of_ceiling),
                           _rate(r.gbytes_per_s, r.bandwidth_of_ceiling),
                           num(r.traffic_bytes, traffic_text(r)),
                           num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
                           _error(r), cell(_notes(r))])
        table.row_css.append(f"row-{r.status}")
    return table


def _compare(record: CompareRecord, anchor: str) -> Section:
    section = Section(kind=record.kind, title=f"attnprof {record.kind} — "
                      f"{record.workload.describe()}", anchor=anchor)
    section.facts += [("workload", record.workload.describe()),
                      ("FLOPs", record.flops_convention),
                      *((("bytes", floor),) if (floor := io_floor_line(record)) else ()),
                      ("CPU allocator", record.settings.cpu_allocator),
                      ("rounds", str(record.settings.plan.rounds))]
    if record.ceilings is not None:
        c = record.ceilings
        section.facts.append(("ceilings", f"matmul {fmt_rate(c.matmul_tflops_per_s)} TFLOP/s, "
                              f"copy {fmt_rate(c.bandwidth_gbytes_per_s)} GB/s ({c.method})"))
    section.facts += _environment(record.environment)
    section.tables.append(comparison_table(f"{anchor}-results", "one row per variant",
                                           record.results))
    _budgets(section, record.budgets, anchor)
    for i, row in enumerate(record.results):
        if row.analysis is not None:
            part = trace_section(row.analysis, title=f"{row.variant}: its trace",
                                 anchor=f"{anchor}-v{i}", trace_path=row.trace)
            section.parts.append(part)
            section.findings += [(row.variant, f) for f in row.analysis.findings]
        elif row.trace:
            section.traces.append(TraceLink(label=row.variant, path=row.trace))
    return section


def _analyze(record: AnalyzeRecord, anchor: str) -> Section:
    section = Section(kind="analyze", title=f"attnprof analyze — "
                      f"{counted(len(record.reports), 'trace')}", anchor=anchor)
    for i, report in enumerate(record.reports):
        part = trace_section(report, title=report.source, anchor=f"{anchor}-t{i}")
        section.parts.append(part)
        section.findings += part.findings
    section.notes += [f"skipped {bad.source}: {bad.reason}" for bad in record.unreadable]
    return section


def _check_rows(name: str, caption: str, rows: list[CheckRow]) -> Table:
    table = Table(name=name, caption=caption,
                  columns=["", "what", "expected", "observed", "evidence / margin"])
    for r in rows:
        table.rows.append([cell("✓" if r.ok else "✗", "status-ok" if r.ok else "status-error"),
                           cell(r.what), cell(r.expected), cell(r.observed), cell(r.detail)])
        table.row_css.append("row-ok" if r.ok else "row-error")
    return table


def _verdict(rows: list[CheckRow], what: str) -> tuple[str, str]:
    bad = sum(not r.ok for r in rows)
    if bad:
        return "status-error", f"{bad} of {len(rows)} {what} did not hold"
    return "status-ok", f"all {len(rows)} {what} hold"


def _budgets(section: Section, budgets: BudgetReport | None, anchor: str) -> None:
    if budgets is None:
        return
    section.tables.append(_check_rows(f"{anchor}-budgets",
                                      f"budgets — {budgets.title or budgets.source}",
                                      budgets.rows))
    section.tables[-1].notes += [f"budget #{u.number} ({u.description}) selects nothing this "
                                 "run measured: not checked" for u in budgets.unmatched]
    section.verdict = _verdict(budgets.rows, "budget checks")


def _check(record: CheckRecord, anchor: str) -> Section:
    section = Section(kind="check", title=f"attnprof check — {record.title or 'expectations'}",
                      anchor=anchor)
    section.facts += [("expectations", record.expectations), ("target", record.target),
                      ("checked", record.source), ("region", record.region)]
    if record.workload is not None:
        section.facts.append(("workload", record.workload.describe()))
    section.facts += _environment(record.environment)
    section.tables.append(_check_rows(f"{anchor}-rows", "expected against observed",
                                      record.rows))
    section.verdict = _verdict(record.rows, "expectations")
    if record.report is not None:
        part = trace_section(record.report, title=f"the trace checked: {record.source}",
                             anchor=f"{anchor}-trace")
        section.parts.append(part)
        section.findings += part.findings
    return section


def _sweep(record: SweepRecord, anchor: str) -> Section:
    swept = ", ".join(f"{a.field} {','.join(map(str, a.values))}" for a in record.grid.axes)
    section = Section(kind=record.kind, title=f"attnprof {record.kind} — {swept or 'one point'}"
                      f" × {', '.join(record.variants)}", anchor=anchor)
    section.facts += [("base workload", record.base.describe()),
                      ("points", f"{len(record.points)} of {record.grid.size()}"),
                      ("executor", record.executor), ("FLOPs", record.flops_convention)]
    section.facts += _environment(record.environment)
    points = Table(name=f"{anchor}-points", caption="every point and variant",
                   columns=["#", *record.grid.fields, "variant", "status", "median ms", "IQR",
                            "peak memory", "max error", "reason"])
    for p in [*record.ordered_points(), *record.batch_points]:
        for r in p.results:
            points.rows.append([num(p.index), *(cell(p.coords.get(f)) for f in
                                                 record.grid.fields),
                                cell(r.variant), _status(r.status), _latency(r), _spread(r),
                                num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
                                _error(r), cell(row_notes(r) if r.status != "ok" else "")])
            points.row_css.append(f"row-{r.status}")
    section.tables.append(points)
    fits = Table(name=f"{anchor}-fits", caption="scaling fits: least squares on log-log axes, "
                 "95% interval of the exponent (Student's t)",
                 columns=["variant", "held fixed", "quantity", "fit", "exponent", "R²",
                          "points", "read with care"])
    for f in record.fits:
        fits.rows.append([cell(f.variant), cell(" ".join(f"{k}={v}" for k, v in
                                                         f.group.items()) or "—"),
                          cell(f.quantity), cell(describe_fit(f)),
                          num(f.exponent, f"{f.exponent:.2f}"),
                          num(f.r_squared, None if f.r_squared is None else f"{f.r_squared:.3f}"),
                          num(f.points), cell("; ".join(f.caveats))])
    section.tables.append(fits)
    section.notes += [f"{c.overtaker} overtakes {c.overtaken} in {c.quantity} at {c.field} ≈ "
                      f"{c.at:.0f}" + (f" (may be noise: {c.caveat})" if c.caveat else "")
                      for c in record.crossovers]
    _budgets(section, record.budgets, anchor)
    return section


def _recommend(record: RecommendRecord, anchor: str) -> Section:
    section = _sweep(record, anchor)
    rec = record.recommendation
    if rec is None:
        return section
    table = Table(name=f"{anchor}-recommendations",
                  caption=f"recommended per shape — {rec.constraints.describe()} ({rec.source})",
                  columns=["#", "shape", "recommended", "runner-up", "tie", "decided by",
                           "not candidates"])
    for r in rec.recommendations:
        best = r.best.variant if r.best else "none"
        table.rows.append([num(r.point), cell(r.shape),
                           cell(best, "status-ok" if r.best else "status-error"),
                           cell(r.runner_up.variant if r.runner_up else "—"),
                           cell(" or ".join(r.tie) if r.tie else ""), cell(r.decided_by),
                           cell("; ".join(f"{k}: {v}" for k, v in r.excluded.items()))])
    section.tables.insert(0, table)
    return section


def _model(record: ModelRecord, anchor: str) -> Section:
    m = record.model
    section = Section(kind="model", title=f"attnprof model — {m.source} ({m.architecture})",
                      anchor=anchor)
    section.facts += [("model", f"{m.source}: {m.architecture}, {m.family}, "
                       f"{m.parameters:,} parameters, {m.weights} weights"),
                      ("shape", f"batch {m.batch} · seq {m.seq} · {m.layers} layers · hidden "
                       f"{m.hidden} · heads {m.heads} (KV {m.kv_heads}) · {m.dtype}")]
    section.facts += _environment(record.environment)
    runs = Table(name=f"{anchor}-runs", caption="one row per implementation and phase",
                 columns=["implementation", "phase", "status", "median ms", "tokens/s",
                          "peak memory", "attention modules", "attention time", "SDPA backend",
                          "max diff", "notes / reason"])
    for r in record.runs:
        lat = r.latency_ms
        share = r.attention_share
        runs.rows.append([
            cell(r.implementation), cell(r.phase), _status(r.status),
            num(lat.median if lat else None, fmt_ms(lat.median) if lat else None),
            num(r.tokens_per_s, None if r.tokens_per_s is None else f"{r.tokens_per_s:,.0f}"),
            num(r.peak_memory_bytes, format_bytes(r.peak_memory_bytes)),
            num(share, None if share is None else f"{share:.0%}"
                + (" ?" if r.shares_unreliable else "")),
            num(r.attention_time_share, None if r.attention_time_share is None
                else f"{r.attention_time_share:.0%}"),
            cell(r.sdpa_backend), num(r.max_abs_diff, None if r.max_abs_diff is None
                                      else f"{r.max_abs_diff:.1e}"),
            cell(r.reason if r.status != "ok" else "; ".join(
                [*([r.shares_unreliable] if r.shares_unreliable else []), *r.notes]))])
        runs.row_css.append(f"row-{r.status}")
        if r.trace:
            section.traces.append(TraceLink(label=f"{r.implementation} · {r.phase}",
                                            path=r.trace))
    section.tables.append(runs)
    for i, r in enumerate(record.runs):
        att = r.attribution
        if att is None:
            continue
        layers = Table(name=f"{anchor}-layers-{i}",
                       caption=f"{r.implementation} · {r.phase} — per layer "
                               f"(time basis: {att.time_basis})",
                       columns=["layer", "attention share", "top component",
                                *(c.name for c in att.parts), "core kernels", "actual"])
        for layer in att.layers:
            by_name = {c.name: c for c in layer.components}
            layers.rows.append([
                cell(layer.name),
                num(layer.attention_share, None if layer.attention_share is None
                    else f"{layer.attention_share:.0%}"),
                cell(layer.top_component),
                *(_component(by_name.get(c.name), att.time_basis) for c in att.parts),
                num(layer.core_kernels), cell(layer.actual)])
        section.tables.append(layers)
        section.findings += [(f"{r.implementation} · {r.phase}", f) for f in att.findings]
    return section


def _component(component: Any, basis: str) -> Cell:
    if component is None:
        return num(None)
    us = component.on(basis)
    return num(us, None if us is None else f"{us:,.0f} µs")


def _limits(record: LimitsRecord, anchor: str) -> Section:
    section = Section(kind="limits", title=f"attnprof limits — largest {record.field} within "
                      f"{format_bytes(record.budget_bytes)}", anchor=anchor)
    section.facts += [("base workload", record.base.describe()),
                      ("budget", format_bytes(record.budget_bytes))]
    section.facts += _environment(record.environment)
    table = Table(name=f"{anchor}-ceilings", caption="measured on real runs, each in a fresh "
                  "worker; the textbook estimate beside it",
                  columns=["variant", "mode", f"largest {record.field}",
                           "first that did not fit", "confirmed run", "textbook estimate",
                           "estimate ÷ measured", "runs"])
    for c in record.ceilings:
        fail = c.first_failure
        confirmed = c.confirmed
        lat = confirmed.latency_ms if confirmed else None
        table.rows.append([
            cell(c.variant), cell(c.mode),
            num(c.largest, None if c.largest is None else
                (f"≥ {c.largest}" if fail is None else str(c.largest))),
            cell((c.unsupported and f"unsupported: {c.unsupported}") or
                 (f"{fail.size}: {fail.status} — {fail.reason}" if fail else
                  f"none up to {c.search[1]}")),
            cell(f"{fmt_ms(lat.median if lat else None)} ms, peak "
                 f"{format_bytes(confirmed.peak_memory_bytes)}" if confirmed else "—"),
            num(c.analytic), num(c.analytic_ratio, None if c.analytic_ratio is None
                                 else f"{c.analytic_ratio:.2f}×"),
            num(len(c.probes))])
        table.row_css.append("row-unsupported" if c.unsupported else
                             "row-ok" if c.largest else "row-oom")
    section.tables.append(table)
    return section


_BUILDERS: dict[type, Callable[[Any, str], Section]] = {
    ProfileRecord: _compare,
    CompareRecord: _compare,
    AnalyzeRecord: _analyze,
    CheckRecord: _check,
    RecommendRecord: _recommend,
    SweepRecord: _sweep,
    ModelRecord: _model,
    LimitsRecord: _limits,
    RanksRecord: ranks_section,
    DiffRecord: diff_section,
}
