"""The one save path (:mod:`attnprof.commands.saving`): a record file written as a run goes,
which a stop leaves holding the last finished part and names in one line; nothing written
when no file was asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.commands.saving import RecordFile
from attnprof.record.sweep import SweepRecord

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def _stop(record_file: RecordFile[SweepRecord], saved: SweepRecord | None) -> None:
    with pytest.raises(KeyboardInterrupt), record_file.kept_on_stop(
            lambda last, path: f"interrupted; {len(last.points)} point(s) are in {path}",
            "interrupted before any point finished; {path} not written"):
        if saved is not None:
            record_file.save(saved)
        raise KeyboardInterrupt


def test_a_stop_keeps_the_last_save_and_says_what_the_file_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = SweepRecord.load(FIXTURES / "sweep-v2.json")
    path = tmp_path / "sweep.json"
    _stop(RecordFile(str(path)), record)
    assert SweepRecord.load(path).points == record.points
    assert capsys.readouterr().err == (f"attnprof: interrupted; {len(record.points)} "
                                       f"point(s) are in {path}\n")


def test_a_stop_before_any_save_says_nothing_was_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.json"
    _stop(RecordFile(str(path)), None)
    assert not path.exists()
    assert "before any point finished" in capsys.readouterr().err


def test_no_file_asked_for_writes_nothing_and_says_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    monkeypatch.chdir(tmp_path)
    _stop(RecordFile(None), SweepRecord.load(FIXTURES / "sweep-v2.json"))
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == ""
