"""``attnprof analyze``: every public trace, the JSON output, user mistakes, start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from attnprof.cli.main import main
from attnprof.record.analyze import AnalyzeRecord


def test_every_public_trace_exits_0_with_a_breakdown(
        public_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The folder stands for its traces, in name order (its README and LICENSE are skipped).
    paths = sorted(str(p) for p in public_traces.glob("*.json.gz"))
    out = tmp_path / "analysis.json"
    assert main(["analyze", str(public_traces), "--json", str(out), "--top", "5"]) == 0
    text = capsys.readouterr().out
    record = msgspec.json.decode(out.read_bytes(), type=AnalyzeRecord)
    assert [r.source for r in record.reports] == paths
    for report in record.reports:
        assert report.source in text
        if report.breakdown.count:
            assert report.breakdown.kernels[0].short in text
    assert "findings" in text and "time per forward" in text


@pytest.mark.parametrize("content, says", [
    (b"", "empty"),
    (b"not json at all", "not"),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur"', "truncated"),
    (json.dumps({"hello": 1}).encode(), "traceEvents"),
])
def test_unreadable_traces_fail_in_one_line_without_output(
        content: bytes, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    out = tmp_path / "out.json"
    assert main(["analyze", str(bad), "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnprof: error:") and "\n" not in err and says in err
    assert not out.exists()


def test_a_folder_without_traces_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("not a trace")
    assert main(["analyze", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "no .json or .json.gz trace" in line and str(tmp_path) in line


def test_missing_file_and_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(tmp_path / "nope.json.gz")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["analyze"]) == 2
    assert main(["analyze", str(tmp_path), "--top", "0"]) == 2


def test_analyze_does_not_import_torch(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    trace = tmp_path / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        torch.randn(8, 8).softmax(-1)
    prof.export_chrome_trace(str(trace))
    code = ("import sys\nfrom attnprof.cli.main import main\n"
            f"assert main(['analyze', {str(trace)!r}]) == 0\n"
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip().endswith("NO-TORCH")
