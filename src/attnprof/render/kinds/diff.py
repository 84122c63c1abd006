"""The views of a diff (kind ``diff``): what changed around the numbers, every row's
metrics with their verdict, and the traces' kernel and finding changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.kinds import View

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.record.diff import DiffRecord
    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["VIEW", "figure_names", "figures", "section", "terminal"]


def terminal(record: DiffRecord, console: Console, top: int) -> None:
    """The changes, the rows and the traces (``top`` rows a table)."""
    from attnprof.render.diff_view import render_diff

    render_diff(record, console, top)


def section(record: DiffRecord, anchor: str) -> Section:
    """The facts that changed, every row's metrics with their verdict, and the traces'
    kernel changes."""
    from attnprof.render.html.page import Section, Table, cell, num

    section = Section(kind="diff", title=f"attnprof diff — {record.old.ref} → {record.new.ref}",
                      anchor=anchor)
    section.facts += [("old", f"{record.old.ref} ({record.old.kind})"),
                      ("new", f"{record.new.ref} ({record.new.kind})"),
                      ("significance", f"alpha {record.alpha:g}, {record.correction} correction")]
    changes = Table(name=f"{anchor}-changes", caption="what changed between the runs",
                    columns=["scope", "what", "old", "new"])
    for c in record.changes:
        changes.rows.append([cell(c.scope), cell(c.what), cell(c.old), cell(c.new)])
    section.tables.append(changes)
    rows = Table(name=f"{anchor}-rows", caption="every row and metric: significant or ~",
                 columns=["row", "state", "metric", "old", "new", "change", "p (adjusted)",
                          "verdict"])
    for r in record.rows:
        key = " · ".join(f"{k}={v}" for k, v in r.key.items())
        for m in r.metrics or [None]:  # type: ignore[list-item]
            if m is None:
                rows.rows.append([cell(key), cell(r.state), cell("—"), num(None), num(None),
                                  num(None), num(None), cell(r.reason)])
                rows.row_css.append(f"row-{r.state}")
                continue
            verdict = ("worse" if m.worse else "better") if m.significant else (
                f"not judged ({m.not_judged})" if m.not_judged else "~")
            rows.rows.append([
                cell(key), cell(r.state), cell(f"{m.metric} ({m.unit})" if m.unit else m.metric),
                num(m.old, None if m.old is None else f"{m.old:.4g}"),
                num(m.new, None if m.new is None else f"{m.new:.4g}"),
                num(m.change, None if m.change is None else f"{m.change:+.1%}"),
                num(m.p_adjusted, None if m.p_adjusted is None else f"{m.p_adjusted:.3g}"),
                cell(verdict, "status-error" if verdict == "worse" else
                     "status-ok" if verdict == "better" else "")])
            rows.row_css.append("row-error" if verdict == "worse" else "")
    section.tables.append(rows)
    for i, trace in enumerate(record.traces):
        for j, region in enumerate(trace.regions):
            kernels = Table(name=f"{anchor}-trace{i}-region{j}",
                            caption=f"{region.old_name} → {region.new_name}: per forward",
                            columns=["name", "what", "old", "new", "state"])
            for k in [*region.kernels, *region.ops, *region.launches]:
                kernels.rows.append([cell(k.name), cell(k.what), num(k.old_per_forward),
                                     num(k.new_per_forward), cell(k.state)])
            section.tables.append(kernels)
        section.notes += [f"finding appeared: {f}" for f in trace.findings_appeared]
        section.notes += [f"finding gone: {f}" for f in trace.findings_gone]
    return section


def figures(record: DiffRecord) -> list[Figure]:
    """Each metric of each row, old beside new, a significant change marked."""
    from attnprof.render.figures.family import diff_figures

    return diff_figures(record)


def figure_names(variants: Sequence[str], traces: int) -> list[str]:
    """The diff's one figure."""
    return ["diff"]


VIEW = View(kind="diff", terminal=terminal, section=section, figures=figures,
            figure_names=figure_names)
