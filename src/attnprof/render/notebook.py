"""A record in a notebook: ``_repr_html_``'s HTML.

The HTML report's body — the headline, the tables, the findings, the metadata folded —
without the page around it: no script and no style sheet, so nothing runs and nothing is
fetched, and the notebook's own styles apply. Without jinja2 (the ``report`` extra) it is
the headline and the record's flat table, escaped by hand.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from attnprof.render.safe import terminal_safe

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["notebook_html"]

#: Rows of the flat table shown without jinja2.
_PLAIN_ROWS = 50


def notebook_html(record: Record) -> str:
    """``record`` as an HTML fragment for a notebook cell."""
    safe = terminal_safe(record)
    try:
        import jinja2
    except ImportError:
        return plain_html(safe)
    from attnprof.render.html.sections import section_of

    env = jinja2.Environment(loader=jinja2.PackageLoader("attnprof.render.html", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    section = section_of(safe, anchor=f"nb-{safe.run_id}")
    return env.get_template("fragment.html.j2").render(s=section)


def plain_html(record: Record) -> str:
    """The headline and the flat table (its first rows), every value escaped."""
    parts = [f"<p><strong>attnprof {html.escape(record.kind)}</strong> "
             f"{html.escape(record.run_id)}</p>",
             f'<p class="headline">{html.escape(record.headline())}</p>']
    try:
        columns, lines = record.flat_table()
    except TypeError:
        return "\n".join(parts) + "\n"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_text(line.get(c)))}</td>"
                                    for c in columns) + "</tr>\n"
                   for line in lines[:_PLAIN_ROWS])
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>")
    if len(lines) > _PLAIN_ROWS:
        parts.append(f"<p>{len(lines) - _PLAIN_ROWS} more rows: record.to_frame() has "
                     "every one.</p>")
    return "\n".join(parts) + "\n"


def _text(value: object) -> str:
    if value is None:
        return "—"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
