"""The gate says what it judged (issue 31, item 5), through the real command on real
records (``tests/fixtures/records``, a comparison saved by attnprof) and real traces:

* peak memory from 0 B to 32 MiB is growth, judged in bytes: the gate fails;
* runs of different workloads are refused by ``--fail-on-regression`` (exit 2, naming the
  fields) unless ``--allow-workload-change``;
* a diff of two traces judges nothing: the gate says so and exits 2;
* one process a side, every row moved the same way, or one row alone by less than one
  variant moves between fresh processes: "not judged (1 process a side)", not a p-value
  that looks decisive; beyond that, judged, with a warning.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from attnprof.cli.main import main

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "compare-v2.json"


def _record(tmp_path: Path, name: str, edit: Any = None) -> str:
    doc = json.loads(RECORD.read_text())
    if edit is not None:
        edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diff", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_peak_memory_growth_from_zero_fails_the_gate(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def zero(doc: dict[str, Any]) -> None:
        doc["results"][0]["peak_memory_bytes"] = 0

    def grown(doc: dict[str, Any]) -> None:
        doc["results"][0]["peak_memory_bytes"] = 32 * 2**20

    old, new = _record(tmp_path, "old.json", zero), _record(tmp_path, "new.json", grown)
    code, out, _ = _diff(capsys, old, new, "--fail-on-regression", "5")
    assert code == 1, out
    assert "1 regression(s)" in out and "0 B → 32.0 MiB (+32.0 MiB" in out
    assert "n/a" not in out


def test_differing_workloads_are_refused_unless_allowed(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    def longer(doc: dict[str, Any]) -> None:
        doc["workload"]["seq"] = doc["workload"]["kv_seq"] = 64

    old, new = _record(tmp_path, "old.json"), _record(tmp_path, "new.json", longer)
    out_json = tmp_path / "diff.json"
    code, out, err = _diff(capsys, old, new, "--fail-on-regression", "5", "--json",
                           str(out_json))
    assert code == 2 and not out_json.exists()
    assert "workloads differ (seq 32 → 64, kv_seq 32 → 64)" in err
    assert "--allow-workload-change" in err and len(err.strip().splitlines()) == 1
    code, out, _ = _diff(capsys, old, new, "--fail-on-regression", "5",
                         "--allow-workload-change", "--json", str(out_json))
    assert code in (0, 1) and out_json.exists() and "regression gate (5%)" in out
    # Without a gate, a diff of different workloads is still shown, with its warning.
    code, out, _ = _diff(capsys, old, new)
    assert code == 0 and "workloads differ" in out


def test_a_trace_diff_gate_that_judged_nothing_exits_2(public_traces: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    old = tmp_path / "old.json.gz"
    shutil.copy(public_traces / "cpu_only.json.gz", old)
    code, out, err = _diff(capsys, str(old), str(public_traces / "cpu_only.json.gz"),
                           "--fail-on-regression", "5")
    assert code == 2 and "gate passed" not in out and "passed" not in out
    assert "judged nothing" in err and "two traces" in err


def test_one_process_a_side_moving_together_is_not_judged(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    def faster(doc: dict[str, Any]) -> None:  # identical code, a faster process: -9.8%
        for row in doc["results"]:
            lat = row["latency_ms"]
            for key in ("median", "iqr", "q1", "q3", "min", "max"):
                lat[key] *= 0.902
            lat["samples"] = [s * 0.902 for s in lat["samples"]]

    old, new = _record(tmp_path, "old.json"), _record(tmp_path, "new.json", faster)
    out_json = tmp_path / "diff.json"
    code, out, _ = _diff(capsys, old, new, "--fail-on-regression", "5", "--json",
                         str(out_json))
    assert code == 0, out
    assert out.count("not judged (1 process a side)") >= 2 and "p=0.000" not in out
    assert "2 row(s) not judged" in out
    diff = json.loads(out_json.read_text())
    for row in diff["rows"]:
        latency = next(m for m in row["metrics"] if m["metric"] == "latency_ms")
        assert latency["p_value"] < 0.001 and latency["significant"] is None
        assert latency["not_judged"] == "1 process a side"


def _one_row_scaled(factor: float) -> Any:
    def edit(doc: dict[str, Any]) -> None:  # only the first row moves; the others do not
        lat = doc["results"][0]["latency_ms"]
        for key in ("median", "iqr", "q1", "q3", "min", "max"):
            lat[key] *= factor
        lat["samples"] = [s * factor for s in lat["samples"]]
    return edit


def test_one_process_a_side_one_row_alone_below_the_floor_is_not_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Two identical back-to-back runs read naive -9.8% p=0.000 while the other rows held:
    # one variant alone moves that far between fresh processes of unchanged code.
    old = _record(tmp_path, "old.json")
    new = _record(tmp_path, "new.json", _one_row_scaled(0.902))
    out_json = tmp_path / "diff.json"
    code, out, _ = _diff(capsys, old, new, "--fail-on-regression", "5", "--json",
                         str(out_json))
    assert code == 0, out
    assert "not judged (1 process a side)" in out and "p=0.000" not in out
    first = json.loads(out_json.read_text())["rows"][0]
    latency = next(m for m in first["metrics"] if m["metric"] == "latency_ms")
    assert latency["p_value"] < 0.001 and latency["significant"] is None
    assert latency["not_judged"] == "1 process a side"


def test_one_process_a_side_one_row_far_beyond_the_floor_is_judged_and_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _record(tmp_path, "old.json")
    new = _record(tmp_path, "new.json", _one_row_scaled(2.0))  # twice as slow, alone
    out_json = tmp_path / "diff.json"
    code, out, _ = _diff(capsys, old, new, "--fail-on-regression", "5", "--json",
                         str(out_json))
    assert code == 1, out
    diff = json.loads(out_json.read_text())
    latency = next(m for m in diff["rows"][0]["metrics"] if m["metric"] == "latency_ms")
    assert latency["significant"] is True and latency["not_judged"] is None
    assert any("judged by their samples with one process a side" in w
               for w in diff["warnings"]), diff["warnings"]
