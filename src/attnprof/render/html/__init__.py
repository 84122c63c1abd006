"""The HTML report: one self-contained file per set of records.

Jinja2 (autoescape on) fills :file:`templates/report.html.j2` with each record's section
(:mod:`.sections`), so every value from a record — names from traces and users, reasons,
paths — is escaped by the template engine, never by hand. The page holds everything it
needs inline: its style, its script, the Vega runtime (:mod:`.vega_runtime`) and each
record's JSON, the same as ``--json`` writes, which a reader can save back out. A
Content-Security-Policy forbids every fetch, so the report opens offline and asks
nothing of the network.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from attnprof.record.family import Record


__all__ = ["HtmlRenderer", "render_html"]


class HtmlRenderer:
    """A self-contained HTML page of the record, with its tables, findings and plots."""

    name: ClassVar[str] = "html"
    extension: ClassVar[str] = ".html"
    output_is_binary: ClassVar[bool] = False

    def render(self, record: Record) -> str:
        """The page of ``record``."""
        return render_html([record])


def render_html(records: Sequence[Record]) -> str:
    """One page, one section per record, in order."""
    from attnprof.render.html.document import build_page

    return build_page(records)
