"""The terminal view of ``attnprof runs``: one line per stored run. Formats only."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from attnprof.formatting import safe_text
from attnprof.store import StoredRun

__all__ = ["describe_run", "render_runs"]


def describe_run(run: StoredRun) -> str:
    """One line about a stored run: id, kind, when, label, commit, command."""
    parts = [f"run {run.run_id}", run.kind, run.created]
    if run.label:
        parts.append(f"label {run.label}")
    if run.git_commit:
        parts.append(f"git {run.git_commit[:10]}{' (dirty)' if run.git_dirty else ''}")
    if run.command:
        parts.append(run.command)
    return safe_text(" · ".join(parts), limit=None)


def render_runs(runs: Sequence[StoredRun], store: str, console: Console) -> None:
    """The runs table, or a line saying there is none."""
    if not runs:
        console.print(Text(f"no stored runs match, in {store}", style="dim"))
        return
    table = Table(title=f"{len(runs)} run(s) in {store}", title_justify="left")
    for column in ("run", "created", "kind", "label", "status", "device", "what",
                   "variants", "commit"):
        table.add_column(column, no_wrap=column in ("run", "created"))
    for r in runs:
        names = ", ".join(r.variants[:4]) + (f" +{len(r.variants) - 4}" if len(r.variants) > 4
                                             else "")
        commit = (r.git_commit or "")[:10] + ("*" if r.git_dirty else "")
        cells = [r.run_id, r.created.replace("+00:00", "Z"), r.kind, r.label or "",
                 r.status, r.device or "", r.summary, names, commit]
        table.add_row(*(Text(safe_text(c)) for c in cells))
    console.print(table)
    hint = "show one with attnprof show RUN, compare two with attnprof diff A B"
    if any(r.git_dirty for r in runs):  # the mark is explained where a row carries it
        hint = f"* the working tree had uncommitted changes; {hint}"
    console.print(Text(hint, style="dim"))
