"""A folder is analysed past a bad file, and attnprof's own outputs in it are not traces
(issue 11, item 9).

Before, one unreadable file in a folder aborted the whole ``attnprof analyze``, and a rerun
over a folder tried to read the ``analysis.json`` the previous run had written there.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.family import is_record_file, load_record


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two real CPU traces, captured now, and a truncated third."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("a.json", "c.json"):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            torch.randn(16, 16).softmax(-1)
        prof.export_chrome_trace(str(traces / name))
    good = (traces / "a.json").read_bytes()
    (traces / "b.json").write_bytes(good[: len(good) // 2])  # cut mid-event
    return traces


def test_one_bad_file_does_not_stop_the_others(folder: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "analysis.json"
    assert main(["analyze", str(folder), "--json", str(out)]) == 1
    captured = capsys.readouterr()
    assert str(folder / "a.json") in captured.out and str(folder / "c.json") in captured.out
    assert f"skipped {folder / 'b.json'}" in captured.out
    (line,) = captured.err.strip().splitlines()
    assert "1 file(s) could not be read as traces" in line and "b.json" in line
    record = load_record(out)
    assert [r.source for r in record.reports] == [str(folder / "a.json"),
                                                  str(folder / "c.json")]
    (bad,) = record.unreadable
    assert bad.source == str(folder / "b.json") and bad.reason


def test_a_bad_file_named_on_the_command_line_still_fails_at_once(
        folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "analysis.json"
    assert main(["analyze", str(folder / "a.json"), str(folder / "b.json"),
                 "--json", str(out)]) == 2
    assert not out.exists()


def test_a_folder_of_bad_files_is_a_usage_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text("not json")
    assert main(["analyze", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "no trace could be read" in line and "x.json" in line


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_rerun_skips_the_analysis_written_into_the_folder(
        gzipped: bool, folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "b.json").unlink()
    first = folder / "analysis.json"
    assert main(["analyze", str(folder), "--json", str(first)]) == 0
    if gzipped:  # a record kept compressed beside the traces
        (folder / "analysis.json.gz").write_bytes(gzip.compress(first.read_bytes()))
    assert is_record_file(first) and not is_record_file(folder / "a.json")
    again = folder / "again.json"
    assert main(["analyze", str(folder), "--json", str(again)]) == 0
    assert [Path(r.source).name for r in load_record(again).reports] == ["a.json", "c.json"]
    # A comparison record written there (compare --json into the trace folder) too.
    (folder / "run.json").write_text(json.dumps({"schema_version": 2, "kind": "compare"}))
    assert main(["analyze", str(folder)]) == 0
