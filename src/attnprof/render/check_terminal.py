"""Terminal rendering of an expectations check: expected and observed side by side."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import safe_text
from attnprof.record.check import CheckRow
from attnprof.render.safe import terminal_safe


def render_check(rows: list[CheckRow], console: Console, *, title: str | None, source: str,
                 region: str) -> None:
    """One row per expectation; mismatches marked in red, with the verdict underneath."""
    # Patterns, names, the title and the source are data: escaped for the terminal first.
    rows = terminal_safe(rows, list[CheckRow])
    title = None if title is None else safe_text(title)
    source, region = safe_text(source), safe_text(region)
    table = Table(title=Text(f"attnprof check — {title or 'expectations'}"),
                  title_justify="left", caption=Text(f"{source} · region {region}"),
                  caption_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("expectation", style="bold")
    table.add_column("expected", no_wrap=True)
    table.add_column("observed", no_wrap=True)
    table.add_column("evidence", overflow="fold", ratio=1)
    for r in rows:
        mark = Text("✓", style="green") if r.ok else Text("✗ mismatch", style="bold red")
        observed = Text(r.observed, style="" if r.ok else "red")
        # Patterns and op names are data, not rich markup.
        table.add_row(mark, Text(r.what), Text(r.expected), observed, Text(r.detail))
    console.print(table)
    bad = sum(not r.ok for r in rows)
    if bad:
        verb = "expectation did not hold" if len(rows) == 1 else "expectations did not hold"
        console.print(f"[bold red]{bad} of {len(rows)} {verb}[/bold red]")
    elif len(rows) == 1:
        console.print("[green]the 1 expectation holds[/green]")
    else:
        console.print(f"[green]all {len(rows)} expectations hold[/green]")
