"""``attnprof profile``: measure, trace and explain variants in one command, on this CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.compare import RunRecord

SMALL = ["--batch", "1", "--heads", "2", "--kv-heads", "1", "--seq", "64", "--head-dim", "16",
         "--min-time", "0.01", "--steps", "2"]


def test_profile_shows_the_hidden_copy_naive_has_and_inplace_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, record_path = tmp_path / "traces", tmp_path / "run.json"
    code = main(["profile", "naive", "naive-inplace", *SMALL, "--out", str(out),
                 "--json", str(record_path)])
    assert code == 0
    text = capsys.readouterr().out
    assert "median ms" in text  # the measurement table
    assert "attnprof::naive — 2 forwards" in text
    assert "masked_fill makes a hidden full copy" in text
    record = RunRecord.load(record_path)
    naive, inplace = record.result("naive"), record.result("naive-inplace")
    assert naive.analysis is not None and inplace.analysis is not None
    assert Path(naive.trace).parent == out and Path(naive.trace).is_file()
    assert naive.analysis.findings_for("hidden-copy")
    assert not inplace.analysis.findings_for("hidden-copy")
    a, b = naive.analysis.regions[0], inplace.analysis.regions[0]
    assert a.kernels_per_forward == b.kernels_per_forward + 1


def test_profile_refuses_bad_input_before_running(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown variant 'nope'" in capsys.readouterr().err
    assert main(["profile", "naive", "--steps", "0", "--out", str(tmp_path)]) == 2
    file = tmp_path / "file"
    file.write_text("x")
    assert main(["profile", "naive", "--out", str(file)]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["profile", "naive", "--json", str(tmp_path / "no" / "r.json")]) == 2
    assert not any(tmp_path.glob("*.gz"))


def test_compare_with_traces_summarises_each_variants_warnings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, record_path = tmp_path / "traces", tmp_path / "run.json"
    small = SMALL[:-2]  # without --steps, a profile flag
    code = main(["compare", "--variants", "naive,sdpa-flash", *small, "--trace", str(out),
                 "--trace-steps", "2", "--json", str(record_path)])
    assert code == 0
    text = capsys.readouterr().out
    summary = text[text.index("what the traces show"):].splitlines()
    naive_line = next(line for line in summary if "│ naive " in line)
    assert "(hidden-copy)" in naive_line
    flash_line = next(line for line in summary if "│ sdpa-flash " in line)
    assert "no warnings" in flash_line
    record = RunRecord.load(record_path)  # the saved record carries the analyses too
    assert record.result("naive").analysis is not None
    assert record.result("naive").analysis.findings_for("hidden-copy")
