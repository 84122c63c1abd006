"""Terminal view of a budgets check: measured against each budget, and by how much."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.record.budgets import BudgetReport

__all__ = ["render_budgets"]


def render_budgets(report: BudgetReport, console: Console) -> None:
    """One row per budget checked at one measured point; failures in red, the verdict
    and the budgets that selected nothing underneath."""
    source = report.source
    table = Table(title=Text(f"budgets — {report.title or source}"), title_justify="left",
                  caption=Text(source), caption_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("budget · variant · workload", overflow="fold", ratio=2)
    table.add_column("budget", no_wrap=True)
    table.add_column("measured", no_wrap=True)
    table.add_column("margin", overflow="fold", ratio=1)
    for r in report.rows:
        mark = Text("✓", style="green") if r.ok else Text("✗ over budget", style="bold red")
        table.add_row(mark, Text(r.what), Text(r.expected),
                      Text(r.observed, style="" if r.ok else "red"), Text(r.detail))
    console.print(table)
    for unmatched in report.unmatched:
        console.print(Text(f"budget #{unmatched.number} ({unmatched.description}) selects "
                           "nothing this run "
                           "measured: not checked", style="yellow"))
    bad = sum(not r.ok for r in report.rows)
    if bad:
        console.print(f"[bold red]{bad} of {len(report.rows)} budget checks failed[/bold red]")
    else:
        console.print(f"[green]all {len(report.rows)} budget checks hold[/green]")
