"""``--markdown PATH`` and ``show --format markdown``: the summary written beside the
other outputs (atomically, checked before any work) and printed for a saved record."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.family import load_record
from attnprof.render.markdown import MarkdownRenderer

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def test_analyze_writes_the_markdown_summary(public_traces: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "summary.md"
    trace = public_traces / "a100_alexnet_inference.json.gz"
    assert main(["analyze", str(trace), "--markdown", str(out), "--json",
                 str(tmp_path / "r.json"), "--no-store"]) == 0
    assert "Markdown summary written to" in capsys.readouterr().out
    text = out.read_text()
    record = load_record(tmp_path / "r.json")
    assert text.startswith("### attnprof analyze") and "#### Findings" in text
    assert record.headline().split(":")[0] in text and "\n|---|" in text


def test_a_markdown_path_that_cannot_be_written_fails_before_any_work(
        public_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = public_traces / "cpu_only.json.gz"
    bad = tmp_path / "missing" / "summary.md"
    record = tmp_path / "r.json"
    assert main(["analyze", str(trace), "--markdown", str(bad), "--json", str(record),
                 "--no-store"]) == 2
    err = capsys.readouterr().err
    assert "--markdown" in err and len(err.strip().splitlines()) == 1
    assert not record.exists() and not bad.exists()


def test_show_prints_the_markdown_summary(capsys: pytest.CaptureFixture[str]) -> None:
    path = RECORDS / "compare-v2.json"
    assert main(["show", str(path), "--format", "markdown"]) == 0
    assert capsys.readouterr().out == MarkdownRenderer().render(load_record(path))
