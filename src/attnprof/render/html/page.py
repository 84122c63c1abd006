"""The page model of the HTML report: what a record shows, as plain text cells.

A record becomes a :class:`Section` — facts (label, value), tables (a header and rows of
cells, each with a sort key and a class for its colour), findings, figures and trace
links — by the builders in :mod:`attnprof.render.html.sections`. Everything here is text
for the template to escape; nothing is markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attnprof.record.finding import Finding
from attnprof.render.figures.base import Figure

__all__ = ["Cell", "Section", "Table", "TraceLink", "cell", "num"]


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, the value it sorts by (a number or the text), and a CSS
    class (a status or severity colour; ``""`` for none)."""

    text: str
    sort: float | str = ""
    css: str = ""


def cell(text: object, css: str = "") -> Cell:
    """A text cell, sorted as text."""
    shown = "—" if text is None else str(text)
    return Cell(shown, shown.lower(), css)


def num(value: float | None, text: str | None = None, css: str = "") -> Cell:
    """A number cell: shown as ``text`` (default ``value`` as it is), sorted by value
    (absent values last)."""
    if value is None:
        return Cell("—", float("inf"), css)
    return Cell(text if text is not None else f"{value:g}", float(value), css)


@dataclass
class Table:
    """A table of the report: ``name`` is its ``data-table`` in the page (tests find each
    table's rows by it), ``columns`` its header."""

    name: str
    caption: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    #: A class per row (its status), the same length as ``rows`` or empty.
    row_css: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TraceLink:
    """A Chrome trace the record names (a path as written: relative to where it ran).
    ``href`` is set by :func:`attnprof.render.html.links.link_traces`, from the record's own
    path; without one the path is shown as text, not as a link."""

    label: str
    path: str
    href: str | None = None


@dataclass
class Section:
    """One record's part of the page."""

    kind: str
    title: str
    anchor: str
    #: The record's answer in a sentence or two (:meth:`RecordBase.headline`): what the
    #: page, the Markdown summary and the notebook view lead with.
    headline: str = ""
    facts: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    findings: list[tuple[str, Finding]] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    traces: list[TraceLink] = field(default_factory=list)
    #: Sub-sections: a trace report each (a profile's variants, an analysis's traces).
    parts: list[Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdict: tuple[str, str] | None = None  # (css class, text)
