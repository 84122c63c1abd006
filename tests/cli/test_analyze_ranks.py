"""``attnprof analyze DIR | FILE... | GLOB`` on a distributed run's traces: the cross-rank
view, its JSON and CSV, a corrupt rank as a row, and the mistakes a user can make."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.family import load_record
from attnprof.record.ranks import RanksRecord


@pytest.fixture
def straggler(gloo_sets: dict[str, Path], tmp_path: Path) -> Path:
    """A copy of the straggler set, free to change."""
    folder = tmp_path / "run"
    shutil.copytree(gloo_sets["straggler"], folder)
    return folder


def test_a_folder_of_ranks_is_one_view_with_json_and_csv(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, table = tmp_path / "ranks.json", tmp_path / "ranks.csv"
    assert main(["analyze", str(straggler), "--json", str(out), "--csv", str(table)]) == 0
    text = capsys.readouterr().out
    record = load_record(out)
    assert isinstance(record, RanksRecord) and record.world_size == 3
    assert "3 ranks of 3" in text and "gloo, cpu" in text
    assert "the rank each step waited for" in text
    assert record.findings[0].title in text and "[warning]" in text
    lines = list(csv.DictReader(io.StringIO(table.read_text())))
    assert [x["rank"] for x in lines] == ["0", "1", "2"]
    assert [x["straggler_steps"] for x in lines] == ["0", "4", "0"]
    assert [x["findings"] for x in lines] == ["0", "1", "0"]


def test_a_quoted_pattern_reads_the_files_it_matches(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ranks.json"
    assert main(["analyze", str(straggler / "rank-*.json.gz"), "--json", str(out)]) == 0
    record = load_record(out)
    assert isinstance(record, RanksRecord) and len(record.ranks) == 3
    assert main(["analyze", str(straggler / "nothing-*.json")]) == 2
    assert "no trace file matches" in capsys.readouterr().err


def test_a_corrupt_rank_is_a_row_and_exit_status_1(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (straggler / "rank-0.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X"'))
    out = tmp_path / "ranks.json"
    assert main(["analyze", str(straggler), "--json", str(out)]) == 1
    captured = capsys.readouterr()
    record = load_record(out)
    assert isinstance(record, RanksRecord)
    assert record.rank(0).error is not None and "not valid trace JSON" in record.rank(0).error
    assert [r.rank for r in record.ranks if r.error is None] == [1, 2]
    assert "rank 0 unreadable:" in captured.out
    assert captured.err.strip().startswith("attnprof: 1 file(s) could not be read")


def test_every_rank_corrupt_is_one_line_and_no_file(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in straggler.iterdir():
        path.write_bytes(b"\x1f\x8b garbage")
    out = tmp_path / "ranks.json"
    assert main(["analyze", str(straggler), "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnprof: error: no trace could be read") and "\n" not in err
    assert not out.exists()


def test_each_analyses_every_rank_on_its_own(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "each.json"
    status = main(["analyze", str(straggler), "--each", "--json", str(out)])
    record = load_record(out)
    assert isinstance(record, AnalyzeRecord) and len(record.reports) == 3
    # Three ranks on a shared machine may have waited for a CPU: then, and only then, 3.
    contended = any(r.contention is not None and r.contention.marked for r in record.reports)
    assert status == (3 if contended else 0)
    assert [r.rank for r in record.reports] == [0, 1, 2]


def test_ranks_told_by_file_name_say_so(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in straggler.iterdir():  # the same traces, their distributedInfo removed
        data = json.loads(gzip.decompress(path.read_bytes()))
        del data["distributedInfo"]
        path.write_bytes(gzip.compress(json.dumps(data).encode()))
    out = tmp_path / "ranks.json"
    assert main(["analyze", str(straggler), "--json", str(out)]) == 0
    record = load_record(out)
    assert isinstance(record, RanksRecord) and record.world_size is None
    assert {r.rank_from for r in record.ranks} == {"file name"}
    assert "ranks 0-2 told by file name: the trace has no distributedInfo" in record.notes
    assert [f.rule for f in record.findings] == ["straggler"]
    assert "told by file name" in capsys.readouterr().out


@pytest.mark.parametrize("argv, says", [
    (["--workers", "0"], "--workers 0 is not a number of workers"),
    (["--workers", "many"], "--workers"),
    (["--ray-address", "127.0.0.1:1"], "--ray-address is for --executor ray"),
    (["--executor", "cluster"], "--executor"),
])
def test_mistakes_are_one_line_and_status_2(
        straggler: Path, argv: list[str], says: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(straggler), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnprof: error:") and says in err and "\n" not in err


def test_an_output_may_not_replace_a_rank(straggler: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    target = straggler / "rank-1.json.gz"
    before = target.read_bytes()
    assert main(["analyze", str(straggler), "--csv", str(target)]) == 2
    assert "rank-1.json.gz" in capsys.readouterr().err
    assert target.read_bytes() == before


def test_reading_ranks_imports_neither_torch_nor_ray(straggler: Path) -> None:
    code = ("import sys\n"
            "from attnprof.cli.main import main\n"
            f"status = main(['analyze', {str(straggler)!r}])\n"
            "assert status == 0, status\n"
            "heavy = [m for m in ('torch', 'ray', 'pandas') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_traces_that_look_like_ranks_but_are_not_a_set_say_why(
        straggler: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Rank 1 twice (a rerun's file beside the first): not one run, each analysed alone.
    shutil.copy(straggler / "rank-1.json.gz", straggler / "rank-1-rerun.json.gz")
    out = tmp_path / "each.json"
    assert main(["analyze", str(straggler), "--json", str(out)]) == 0
    assert isinstance(load_record(out), AnalyzeRecord)
    err = capsys.readouterr().err
    assert "note: not read as the ranks of one run (rank 1 appears twice" in err
