"""The views of a comparison (kind ``compare``): its table, each traced variant's findings,
its budgets and costs; the HTML section with each variant's trace; latency, memory and
roofline figures, and each traced variant's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.compare import CompareRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: CompareRecord, console: Console, top: int) -> None:
    """The comparison table, one line of findings per traced variant, then the budgets'
    verdict and the costs where the record has them."""
    from attnprof.render.compare_table import render_compare, render_findings_by_variant

    render_compare(record, console)
    render_findings_by_variant(record, console)
    if record.budgets is not None:
        from attnprof.render.budget_table import render_budgets

        render_budgets(record.budgets, console)
    if record.price is not None:
        from attnprof.render.cost_table import render_costs

        render_costs(record, console)


def section(record: CompareRecord, anchor: str) -> Section:
    """The workload, the ceilings and the environment; one row per variant; the budgets;
    each traced variant's trace as a part (a trace without its analysis as a link)."""
    from attnprof.formatting import fmt_rate
    from attnprof.render.compare_table import io_floor_line
    from attnprof.render.html.page import Section, TraceLink
    from attnprof.render.html.sections import add_budgets, comparison_table, environment_facts
    from attnprof.render.html.trace import trace_section

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
    section.facts += environment_facts(record.environment)
    section.tables.append(comparison_table(f"{anchor}-results", "one row per variant",
                                           record.results))
    add_budgets(section, record.budgets, anchor)
    for i, row in enumerate(record.results):
        if row.analysis is not None:
            part = trace_section(row.analysis, title=f"{row.variant}: its trace",
                                 anchor=f"{anchor}-v{i}", trace_path=row.trace)
            section.parts.append(part)
            section.findings += [(row.variant, f) for f in row.analysis.findings]
        elif row.trace:
            section.traces.append(TraceLink(label=row.variant, path=row.trace))
    return section


def figures(record: CompareRecord) -> list[Figure]:
    """Latency, memory and (with ceilings) the roofline; then each traced variant's
    categories and timeline."""
    from attnprof.render.figures.compare import compare_figures
    from attnprof.render.figures.trace import trace_figures

    made = compare_figures(record)
    for row in record.results:
        if row.analysis is not None:
            made += trace_figures(row.analysis, prefix=row.variant)
    return made


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The three comparison figures, and each variant's trace figures (named by the
    variant as a file name)."""
    from attnprof.render.figures.base import TRACE_FIGURES, file_stem

    return ["latency", "memory", "roofline",
            *(f"{file_stem(v)}-{part}" for v in variants for part in TRACE_FIGURES)]


VIEW = View(kind="compare", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
