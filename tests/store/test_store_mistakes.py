"""What a careless or hostile user gives the history commands: each is one line naming
the bad value, exit status 2, nothing written (in-process, as the console script runs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attnprof.cli.main import main


def _mistake(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnprof: error: ")
    return lines[0]


@pytest.mark.parametrize(("args", "needle"), [
    (["runs", "--since", "yesterday"], "--since 'yesterday' is not a date"),
    (["runs", "--until", "1e9d"], "--until '1e9d' is not a date"),
    (["runs", "--limit", "-1"], "--limit must be 0 (all) or a positive integer"),
    (["runs", "--kind", "nosuch"], "invalid choice: 'nosuch'"),
    (["runs", "--store", "/proc/self/x.db"], "under the kernel's proc interface"),
    (["runs", "--store", "/tmp/../sys/x.db"], "under the kernel's sys interface"),
    (["runs", "--store", ""], "--store is an empty path"),
    (["diff", "a", "b", "--fail-on-regression", "inf"], "'inf' is not a percentage"),
    (["diff", "a", "b", "--fail-on-regression", "-5"], "'-5' is not a percentage"),
    (["diff", "a", "b", "--fail-on-regression", "1e999"], "'1e999' is not a percentage"),
    (["diff", "", "b"], "an empty name to diff"),
    (["show", "x", "--top", "0"], "--top must be a positive integer"),
    (["env", "--dtypes", "fp8", "--refresh"], "unknown dtype 'fp8'"),
    (["analyze", "x.json", "--label", "a\nb"], "--label 'a\\nb' must be non-empty text"),
    (["analyze", "x.json", "--label", " "], "must be non-empty text on one line"),
])
def test_mistakes(args: list[str], needle: str, capsys: pytest.CaptureFixture[str],
                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNPROF_STORE", str(tmp_path / "runs.db"))
    assert needle in _mistake(args, capsys)
    assert not (tmp_path / "runs.db").exists()  # nothing made


def test_fifos(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    store = ["--store", str(tmp_path / "runs.db")]
    assert "is not a regular file (a FIFO" in _mistake(["runs", "--store", str(fifo)], capsys)
    assert "is not a regular file" in _mistake(["show", str(fifo), *store], capsys)
    assert "is not a regular file" in _mistake(["diff", str(fifo), "x", *store], capsys)


def test_a_label_with_control_characters_is_shown_escaped(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    line = _mistake(["analyze", "x.json", "--label", "\x1b[31mred", "--store",
                     str(tmp_path / "s.db")], capsys)
    assert "\x1b" not in line and "\\x1b" in line


def test_an_unusable_default_store_warns_and_the_run_goes_on(
        capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, public_traces: Path) -> None:
    home = tmp_path / "data"
    home.mkdir()
    (home / "attnprof").mkdir()
    (home / "attnprof" / "runs.db").mkdir()  # the default store's path is a folder
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    monkeypatch.delenv("ATTNPROF_STORE")
    assert main(["analyze", str(public_traces / "cpu_only.json.gz")]) == 0
    out, err = capsys.readouterr()
    assert "cpu_only" in out and "stored as run" not in out
    (line,) = err.strip().splitlines()
    assert line.startswith("attnprof: warning: store ") and "is a folder" in line
    assert "this run is not stored" in line
    # A store the user named is their mistake: exit 2, before anything runs.
    monkeypatch.setenv("ATTNPROF_STORE", str(home / "attnprof" / "runs.db"))
    assert "is a folder" in _mistake(["analyze", str(public_traces / "cpu_only.json.gz")],
                                     capsys)
