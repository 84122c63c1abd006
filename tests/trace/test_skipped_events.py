"""Events that cannot be placed in time are counted, by reason, and said so.

They stay rows of the table (and in the event count); the analysis leaves them out
everywhere, and the trace metadata, the JSON report and the terminal report say how many
and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.cli.main import main
from attnprof.record.analyze import AnalyzeRecord
from attnprof.trace import load_trace

OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1}
KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
          "args": {"correlation": 1, "device": 0, "stream": 7}}


def _write(path: Path, events: list[dict[str, Any]], *, huge_dur: bool = False) -> Path:
    text = json.dumps({"traceEvents": events})
    # json.dumps cannot write a number out of float range; the trace may hold one.
    path.write_text(text.replace('"HUGE"', "1e999") if huge_dur else text)
    return path


def _odd_events() -> list[dict[str, Any]]:
    return [
        {**OP, "ts": 10, "dur": 5},
        {**OP, "ts": 20},  # missing dur
        {**OP, "ts": 30, "dur": -3},  # negative dur
        {**OP, "ts": 40, "dur": "long"},  # dur not a number
        {**OP, "ts": 45, "dur": "HUGE"},  # dur out of float range: not a number
        {**OP, "dur": 4},  # missing ts
        {**OP, "ts": "soon", "dur": 4},  # ts not a number
        {**OP, "ts": None, "dur": 4},  # null is as good as absent
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 1, "ts": 50},
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 1},
    ]


EXPECTED = {"dur not a number": 2, "missing dur": 1, "missing ts": 3, "negative dur": 1,
            "ts not a number": 1}


@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_reasons_are_counted_and_rows_kept(tmp_path: Path, chunk: int) -> None:
    trace = load_trace(_write(tmp_path / "t.json", _odd_events(), huge_dur=True),
                       chunk_bytes=chunk)
    assert trace.meta.skipped_events == EXPECTED
    assert trace.meta.n_events == len(trace.events) == 10  # still rows, still counted
    assert int((~trace.events.mask_timed()).sum()) == sum(EXPECTED.values())


def test_typed_and_loose_reading_agree(tmp_path: Path) -> None:
    # Only missing values: every batch types, and the counts match those read loosely.
    plain = [{**OP, "ts": 10, "dur": 5}, {**OP, "ts": 20}, {**OP, "dur": 1},
             {**OP, "ts": 30, "dur": -1}]
    assert load_trace(_write(tmp_path / "t.json", plain)).meta.skipped_events == {
        "missing dur": 1, "missing ts": 1, "negative dur": 1}
    assert load_trace(_write(tmp_path / "ok.json", [{**OP, "ts": 1, "dur": 1}])
                      ).meta.skipped_events == {}


def test_the_analysis_leaves_them_out_and_reports_them(tmp_path: Path) -> None:
    events = [
        {**OP, "ts": 10, "dur": 50},
        {**OP, "ts": 100, "dur": -5},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 20, "dur": 5, "args": {"correlation": 1}},
        {**KERNEL, "ts": 30, "dur": 8},
        {**KERNEL, "ts": 40, "args": {"correlation": 2, "device": 0, "stream": 7}},
        {**KERNEL, "ts": 50, "dur": -2, "args": {"correlation": 3, "device": 0, "stream": 7}},
    ]
    report = analyze_trace(load_trace(_write(tmp_path / "t.json", events)))
    assert report.skipped_events == {"missing dur": 1, "negative dur": 2}
    assert report.events == 6
    # Only the usable kernel is counted, in the breakdown and in the region alike.
    assert report.breakdown.count == 1 and report.breakdown.total_us == 8.0
    (region,) = report.regions
    assert [(k.name, k.count) for k in region.kernels] == [("gemm", 1)]
    assert [o.name for o in region.ops] == ["aten::mm"] and region.ops[0].count == 1


def test_json_and_terminal_say_how_many_and_why(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "t.json", _odd_events(), huge_dur=True)
    out = tmp_path / "out.json"
    assert main(["analyze", str(path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    (report,) = msgspec.json.decode(out.read_bytes(), type=AnalyzeRecord).reports
    assert report.skipped_events == EXPECTED
    line = next(x for x in text.splitlines() if "skipped" in x)
    assert line.startswith("8 events skipped") and "1 missing dur" in line
    assert "1 negative dur" in line and "2 dur not a number" in line


def test_a_clean_trace_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path / "t.json", [{**OP, "ts": 1, "dur": 1}])
    assert main(["analyze", str(path)]) == 0
    assert "skipped" not in capsys.readouterr().out
