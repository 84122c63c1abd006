"""The HTML report as a person opens it: every kind in headless Chromium, offline.

Each report must open with no console error and no request, and its DOM must hold every
row of the record's tables, each plot (drawn, as SVG) and each finding. A screenshot of
each is saved beside the test's files (``ATTNPROF_SCREENSHOTS=DIR`` keeps them, of the
whole page).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from chromium import PageView, open_page

from attnprof.analysis.analyze import analyze_files
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import RecommendRecord, SweepRecord
from attnprof.render import HtmlRenderer, write_rendered
from attnprof.render.figures import figures_of
from attnprof.render.safe import terminal_safe

KINDS = ("compare", "compare-statuses", "profile", "analyze", "sweep", "model", "check",
         "limits", "recommend", "ranks", "diff", "diff-trace")


def _screenshot(tmp_path: Path, name: str) -> Path:
    folder = os.environ.get("ATTNPROF_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder) / f"{name}.png"
    return tmp_path / f"{name}.png"


def open_report(record: Any, tmp_path: Path, name: str) -> PageView:
    path = tmp_path / f"{name}.html"
    write_rendered(HtmlRenderer(), record, path)
    # Whole pages for a person to look at (ATTNPROF_SCREENSHOTS); else the first screen:
    # painting a long page whole takes seconds (12 s for the A100 trace's).
    view = open_page(path, screenshot=_screenshot(tmp_path, name),
                     full_page=bool(os.environ.get("ATTNPROF_SCREENSHOTS")))
    assert view.console_errors == []
    assert view.requests == []
    assert view.screenshot[:8] == b"\x89PNG\r\n\x1a\n"
    return view


def expected_tables(record: Any) -> dict[str, list[str]]:
    """Per table (by its ``data-table`` suffix), the first cell of every row it must
    hold, from the record itself."""
    r = terminal_safe(record)
    tables: dict[str, list[str]] = {}
    if isinstance(r, CompareRecord):
        tables["results"] = [row.variant for row in r.results]
    if isinstance(r, AnalyzeRecord):
        for i, report in enumerate(r.reports):
            tables[f"t{i}-regions"] = [g.name for g in report.regions]
            for g in report.regions:
                tables[f"t{i}-kernels-{g.name}"] = [k.name for k in g.kernels]
    if isinstance(r, SweepRecord):
        tables["points"] = [str(p.index) for p in [*r.ordered_points(), *r.batch_points]
                            for _ in p.results]
        tables["fits"] = [f.variant for f in r.fits]
    if isinstance(r, RecommendRecord) and r.recommendation is not None:
        tables["recommendations"] = [str(x.point) for x in r.recommendation.recommendations]
    if isinstance(r, ModelRecord):
        tables["runs"] = [run.implementation for run in r.runs]
        for i, run in enumerate(r.runs):
            if run.attribution is not None:
                tables[f"layers-{i}"] = [layer.name for layer in run.attribution.layers]
    if isinstance(r, CheckRecord):
        tables["rows"] = ["✓" if row.ok else "✗" for row in r.rows]
    if isinstance(r, LimitsRecord):
        tables["ceilings"] = [c.variant for c in r.ceilings]
    if isinstance(r, RanksRecord):
        tables["ranks"] = [str(x.rank) if x.rank is not None else "—" for x in r.ranks]
        tables["steps"] = [str(s.step) for s in r.steps]
    if isinstance(r, DiffRecord):
        tables["changes"] = [c.scope for c in r.changes]
        tables["rows"] = [" · ".join(f"{k}={v}" for k, v in row.key.items())
                          for row in r.rows for _ in (row.metrics or [None])]
    return tables


def findings_of(record: Any) -> list[str]:
    r = terminal_safe(record)
    if isinstance(r, CompareRecord):
        return [f.title for row in r.results if row.analysis for f in row.analysis.findings]
    if isinstance(r, AnalyzeRecord):
        return [f.title for report in r.reports for f in report.findings]
    if isinstance(r, CheckRecord) and r.report is not None:
        return [f.title for f in r.report.findings]
    if isinstance(r, ModelRecord):
        return [f.title for run in r.runs if run.attribution for f in run.attribution.findings]
    if isinstance(r, RanksRecord):
        return [f.title for f in r.findings]
    return []


def assert_complete(view: PageView, record: Any) -> None:
    """Every table row, plot and finding of ``record`` is in the page."""
    tables = view.dom["tables"]
    for suffix, firsts in expected_tables(record).items():
        name = f"r0-{suffix}"
        assert name in tables, (name, sorted(tables))
        assert [row[0] for row in tables[name]] == firsts, name
    figures = view.dom["figures"]
    assert [f["name"] for f in figures] == [f.name for f in figures_of(record)]
    for figure in figures:
        assert figure["drawn"] == "yes" and figure["svg"] and not figure["error"], figure
    titles = [" ".join(t.split()) for t in view.dom["findings"]]
    for title in findings_of(record):
        assert any(title in t for t in titles), title
    assert len(titles) == len(findings_of(record))


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_opens_offline_with_every_row_plot_and_finding(
        kind: str, records_by_kind: dict[str, object], tmp_path: Path) -> None:
    record = records_by_kind[kind]
    view = open_report(record, tmp_path, kind)
    assert_complete(view, record)
    if kind == "model":  # compared on the same weights
        impls = {run.implementation for run in record.runs}  # type: ignore[attr-defined]
        assert {"eager", "sdpa"} <= impls


def test_a_public_gpu_trace_report(public_traces: Path, tmp_path: Path) -> None:
    record = analyze_files([str(public_traces / "a100_trace_control.json.gz")])
    assert record.reports[0].device == "cuda" and record.reports[0].timeline is not None
    view = open_report(record, tmp_path, "analyze-a100")
    assert_complete(view, record)
    assert "Perfetto" in view.text


def test_the_page_embeds_the_record_a_reader_can_save_back(
        records_by_kind: dict[str, object], tmp_path: Path) -> None:
    """The JSON in the page, as its "Save" button writes it, is the record."""
    from attnprof.record.family import decode_record
    from attnprof.render.html.document import script_json

    record = records_by_kind["profile"]
    html = HtmlRenderer().render(record)  # type: ignore[arg-type]
    assert script_json(record.to_json()) in html  # type: ignore[attr-defined]
    assert "</script" not in script_json(b'{"a": "</script><!--"}')
    path = tmp_path / "page.html"
    path.write_text(html)
    view = open_page(path, evaluate={"saved": "window.attnprofRecordText('record-0')"})
    assert view.console_errors == [] and view.requests == []
    assert decode_record(view.values["saved"]) == record
