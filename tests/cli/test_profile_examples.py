"""``attnprof profile file.py:fn`` on the example user files: each gets its warning, with
evidence and a fix, in the terminal report and in the saved record."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.compare import RunRecord

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "attention"
SMALL = ["--batch", "1", "--heads", "4", "--kv-heads", "2", "--seq", "64", "--head-dim", "16",
         "--min-time", "0.01", "--steps", "2"]


def test_profile_explains_a_head_loop_and_layout_copies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = f"{EXAMPLES / 'loop_over_heads.py'}:attention"
    contiguous = f"{EXAMPLES / 'transposed_contiguous.py'}:attention"
    record_path = tmp_path / "run.json"
    code = main(["profile", loop, contiguous, *SMALL, "--out", str(tmp_path / "traces"),
                 "--json", str(record_path)])
    assert code == 0
    text = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "[warning] attention runs in a Python loop: 4 repetitions" in text
    assert "one repetition per head" in text
    assert "[warning] aten::contiguous copies whole attention tensors" in text
    assert text.count("fix: ") >= 2
    record = RunRecord.load(record_path)
    loop_row, copy_row = record.result(loop), record.result(contiguous)
    assert loop_row.analysis is not None and copy_row.analysis is not None
    assert loop_row.analysis.findings_for("looped-attention")
    assert copy_row.analysis.findings_for("layout-copy")
    assert not copy_row.analysis.findings_for("looped-attention")
