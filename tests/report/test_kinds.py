"""Every record kind owns its views (issue 32, item 2): a module under ``render/kinds/``
with a terminal view, an HTML section, figures and figure names, and on the record its
CSV rows and its ``attnprof runs`` summary; the generic renderers name no kind. A kind
added to the record family without a view fails here, naming the file to write."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from attnprof.record.base import Listing, RecordBase
from attnprof.record.family import RECORD_TYPES
from attnprof.render.html.page import Section
from attnprof.render.kinds import View, view_of
from attnprof.render.safe import terminal_safe

SRC = Path(__file__).resolve().parents[2] / "src" / "attnprof"
TAGS = [str(t.__struct_config__.tag) for t in RECORD_TYPES]  # type: ignore[attr-defined]
#: Records of every kind from the session fixture (two compare and two diff shapes).
SAMPLES = ("compare", "compare-statuses", "profile", "analyze", "compare-v1", "sweep",
           "model", "ranks", "diff", "diff-trace", "check", "limits", "recommend")
#: The renderers and helpers that serve every kind: none may name one.
GENERIC = ("render/terminal.py", "render/csv_table.py", "render/html/sections.py",
           "render/html/document.py", "render/figures/__init__.py", "render/images.py",
           "render/markdown.py", "render/notebook.py", "store/summary.py")


def test_every_kind_of_the_family_has_a_view_module_and_no_other_kind_does() -> None:
    modules = {p.stem for p in (SRC / "render" / "kinds").glob("*.py")} - {"__init__"}
    assert modules == set(TAGS)


@pytest.mark.parametrize("kind", TAGS)
def test_the_view_has_every_part(kind: str) -> None:
    view = view_of(kind)
    assert isinstance(view, View) and view.kind == kind
    for part in ("terminal", "section", "figures", "figure_names"):
        assert callable(getattr(view, part)), f"{kind}: no {part}"
    names = view.figure_names(("a",), 1)
    assert names and all(isinstance(n, str) and n for n in names)


@pytest.mark.parametrize("record_type", RECORD_TYPES, ids=TAGS)
def test_the_record_says_its_own_csv_rows_and_listing(record_type: type[RecordBase]) -> None:
    """The parts that live on the record (the store and ``to_frame`` sit below render):
    each kind overrides the base's fallbacks, its own or its parent kind's."""
    assert record_type.flat_table is not RecordBase.flat_table
    assert record_type.listing is not RecordBase.listing


def test_a_kind_without_a_view_is_refused_naming_the_file_to_write() -> None:
    with pytest.raises(TypeError, match=r"render/kinds/budget\.py"):
        view_of("budget")


@pytest.mark.parametrize("sample", SAMPLES)
def test_each_part_shows_the_record(sample: str, records_by_kind: dict[str, Any]) -> None:
    record = terminal_safe(records_by_kind[sample])
    view = view_of(record.kind)
    console = Console(width=160, record=True, color_system=None)
    view.terminal(record, console, 5)
    assert console.export_text().strip()
    section = view.section(record, "r0")
    assert isinstance(section, Section) and section.kind == record.kind
    assert section.tables or section.parts, f"{sample}: an empty section"
    figures = view.figures(record)
    assert figures and len({f.name for f in figures}) == len(figures)
    columns, lines = record.flat_table()
    assert columns and lines and all(set(line) <= set(columns) for line in lines)
    listing = record.listing()
    assert isinstance(listing, Listing) and listing.summary not in ("", record.kind)


@pytest.mark.parametrize("path", GENERIC)
def test_no_generic_renderer_names_a_record_kind(path: str) -> None:
    """Dispatch is by ``record.kind`` through :func:`view_of`: a generic module that
    imported ``CompareRecord`` (or any kind's class) would be switching on it again."""
    tree = ast.parse((SRC / path).read_text())
    named = [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and (node.module or "").startswith("attnprof.record.")
             for alias in node.names]
    kinds = [n for n in named if n.endswith("Record") and n != "Record"]
    assert kinds == [], f"{path} imports record kinds {kinds}"
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "__mro__"]
