"""Markdown: the headline, the main table and the findings, for a CI job summary or a pull
request comment (GitHub-flavoured, under 64 KiB).

It draws from the same page model as the HTML report (:mod:`attnprof.render.html.sections`),
so the two show the same cells; the headline is the record's own
(:meth:`~attnprof.record.base.RecordBase.headline`). Every value is escaped for Markdown
(no table cell can end early, no name from a trace becomes a link or markup).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar

from attnprof.render.safe import terminal_safe

if TYPE_CHECKING:
    from attnprof.record.family import Record
    from attnprof.render.html.page import Section, Table

__all__ = ["MAX_BYTES", "MarkdownRenderer", "markdown_escape"]

#: GitHub's job summary takes up to 1 MiB a step, a PR comment 64 KiB: stay under both.
MAX_BYTES = 60 * 1024
#: Rows of the main table shown (the CSV and the JSON have every one).
MAX_ROWS = 40
MAX_FINDINGS = 10
_CELL = 120
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")


def markdown_escape(text: str, limit: int | None = _CELL) -> str:
    """``text`` on one line, Markdown's and HTML's characters escaped, cut to ``limit``."""
    flat = " ".join(str(text).split())
    if limit is not None and len(flat) > limit:
        flat = flat[:limit - 1] + "…"
    return _SPECIAL.sub(r"\\\1", flat).replace("&", "&amp;")


class MarkdownRenderer:
    """A short GitHub-flavoured Markdown summary of the record."""

    name: ClassVar[str] = "markdown"
    extension: ClassVar[str] = ".md"
    output_is_binary: ClassVar[bool] = False

    def __init__(self, *, rows: int = MAX_ROWS) -> None:
        self.rows = rows

    def render(self, record: Record) -> str:
        """The summary; cut (with a note saying so) to stay under :data:`MAX_BYTES`."""
        # The page model (and the figures it names) only when a summary is asked for:
        # importing the renderers stays as cheap as before for every command.
        from attnprof.render.html.sections import section_of

        safe = terminal_safe(record)
        section = section_of(safe, anchor="r0")
        rows = self.rows
        while True:
            text = _summary(safe, section, rows)
            if len(text.encode()) <= MAX_BYTES or rows <= 1:
                return text
            rows //= 2


def main_table(section: Section) -> Table | None:
    """A diff's rows (its verdicts) when it has any; else the section's first table with
    rows, else its first part's; else its first table, empty."""
    tables = [*section.tables, *(t for p in section.parts for t in p.tables)]
    verdicts = next((t for t in section.tables if t.name.endswith("-rows") and t.rows), None)
    return verdicts or next((t for t in tables if t.rows), tables[0] if tables else None)


def _summary(record: Record, section: Section, rows: int) -> str:
    lines = [f"### {markdown_escape(section.title, None)}", "",
             f"**{markdown_escape(record.headline(), None)}**", ""]
    if section.verdict is not None:
        lines += [markdown_escape(section.verdict[1], None), ""]
    table = main_table(section)
    if table is not None:
        lines += _table(table, rows)
    findings = section.findings
    if findings:
        lines += ["#### Findings", ""]
        for where, f in findings[:MAX_FINDINGS]:
            lines.append(f"- **{f.severity}** {markdown_escape(f.title, 200)} "
                         f"({markdown_escape(where, 60)}) — fix: {markdown_escape(f.fix, 200)}")
        if len(findings) > MAX_FINDINGS:
            lines.append(f"- … and {len(findings) - MAX_FINDINGS} more (see the HTML report)")
        lines.append("")
    lines.append(f"<sub>attnprof {markdown_escape(record.attnprof, 40)} · "
                 f"{markdown_escape(record.kind, 40)} · run "
                 f"{markdown_escape(record.run_id, 80)}</sub>")
    return "\n".join(lines) + "\n"


def _table(table: Table, rows: int) -> list[str]:
    head = [markdown_escape(c) for c in table.columns]
    lines = [f"| {' | '.join(head)} |", f"|{'---|' * len(head)}"]
    for row in table.rows[:rows]:
        cells = [markdown_escape(c.text) for c in row] + [""] * (len(head) - len(row))
        lines.append(f"| {' | '.join(cells[:len(head)])} |")
    if len(table.rows) > rows:
        lines.append("")
        lines.append(f"*{len(table.rows) - rows} more rows: the CSV and the JSON have "
                     "every one.*")
    if table.caption:
        lines += ["", f"*{markdown_escape(table.caption, 200)}*"]
    return [*lines, ""]
