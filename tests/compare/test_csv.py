"""``--csv``: one line per variant, with the workload, that reads back to the record's values."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.compare import RunRecord
from attnprof.render.csv_table import COLUMNS, render_csv
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings


def test_csv_reads_back_to_the_record(fast_settings: Settings) -> None:
    record = compare(variants=["naive", "sdpa", "sdpa-efficient"], settings=fast_settings,
                     batch=1, heads=2, kv_heads=1, seq=32, head_dim=16, device="cpu")
    rows = list(csv.DictReader(io.StringIO(render_csv(record))))
    assert tuple(rows[0]) == COLUMNS
    assert [r["variant"] for r in rows] == ["naive", "sdpa", "sdpa-efficient"]
    for line, result in zip(rows, record.results, strict=True):
        assert line["status"] == result.status
        assert (line["seq"], line["dtype"], line["device"]) == ("32", "float32", "cpu")
        if result.latency_ms is None:
            assert line["median_ms"] == "" and line["reason"] == result.reason
        else:
            assert float(line["median_ms"]) == result.latency_ms.median
            assert int(line["samples"]) == result.latency_ms.count
            assert float(line["max_abs_error"]) == result.max_abs_error
    assert rows[1]["sdpa_backend"] == "flash (CPU)"


def test_compare_writes_csv_and_refuses_a_bad_path_up_front(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    small = ["--batch", "1", "--heads", "2", "--kv-heads", "1", "--seq", "32", "--head-dim",
             "16", "--min-time", "0.01", "--variants", "sdpa"]
    out, record = tmp_path / "run.csv", tmp_path / "run.json"
    assert main(["compare", *small, "--csv", str(out), "--json", str(record)]) == 0
    (line,) = csv.DictReader(out.open())
    assert float(line["median_ms"]) == RunRecord.load(record).result("sdpa").latency_ms.median
    capsys.readouterr()
    missing = tmp_path / "no" / "such" / "dir" / "run.csv"
    assert main(["compare", *small, "--csv", str(missing)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "run.csv" in err and not missing.parent.exists()
