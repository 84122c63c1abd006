"""``attnprof project``: bounds of a real comparison's rows on the table's devices, the
figures labelled for what they are, mistakes in one line, and the largest sequence it
estimates agreeing with what ``limits`` finds by running (issue 34)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.analysis.projection import bound_of, device_target
from attnprof.cli.main import main
from attnprof.knowledge.devices import DEVICES
from attnprof.record.compare import CompareRecord
from attnprof.record.family import load_record
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan

SHAPE = {"batch": 1, "heads": 4, "head_dim": 64, "seq": 512}


@pytest.fixture(scope="module")
def record_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                        max_samples=5, min_warmup_calls=1, rounds=1),
                        check_accuracy=False, threads=1)
    record = compare(variants=["naive", "sdpa"], settings=settings, device="cpu", **SHAPE)
    path = tmp_path_factory.mktemp("project") / "compare.json"
    record.save(path)
    return path


def test_bounds_per_variant_and_target_with_their_assumptions(
        record_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    out = tmp_path / "p.json"
    assert main(["project", str(record_file), "--to", "h100-sxm,mi300x", "--json",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "bound = max(FLOPs / peak FLOP/s for the dtype, traffic / memory bandwidth)" in text
    assert "never measured" in text
    # a CPU is no device of the table's families: no projection, and it says so
    assert "no projection: the rows were not measured on a device in the table" in text
    record = load_record(record_file)
    assert isinstance(record, CompareRecord)
    data = json.loads(out.read_text())
    assert data["kind"] == "projection" and data["assumptions"]
    rows = {(r["variant"], r["target"]): r for r in data["rows"]}
    assert set(rows) == {(v, t) for v in ("naive", "sdpa") for t in ("h100-sxm", "mi300x")}
    for row in record.results:
        for name in ("h100-sxm", "mi300x"):
            bound = bound_of(row.flops, row.traffic_bytes,
                             device_target(DEVICES[name], "float32"))
            assert bound is not None
            got = rows[(row.variant, name)]
            assert got["bound_s"] == pytest.approx(bound.seconds)
            assert got["projection_s"] is None  # never a projection without a measurement
            assert got["limited_by"] == bound.limited_by
            assert f"{bound.seconds * 1e3:.4g}" in text
            assert row.latency_ms is not None  # measured here, in ms, beside the bounds
            assert f"{row.latency_ms.median:.4g}" in text
            # the naive variant materialises the scores: its memory grows with seq squared
            scaling = "quadratic" if row.variant == "naive" else "linear"
            assert got["memory_scaling"] == scaling
            assert got["largest_seq_estimate"] % 64 == 0


def test_a_target_without_a_figure_for_the_dtype_says_so(
        record_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    devices = tmp_path / "devices.toml"
    devices.write_text('[devices.bf16-only]\nfamily = "x"\nbandwidth_gbytes_per_s = 100\n'
                       'memory_bytes = 1e9\n[devices.bf16-only.peak_tflops]\nbf16 = 10\n')
    assert main(["project", str(record_file), "--to", "bf16-only", "--devices",
                 str(devices)]) == 0
    text = capsys.readouterr().out
    assert "the datasheet of bf16-only gives no fp32 figure" in text


@pytest.mark.parametrize(("argv", "said"), [
    (["--to", "h1000"], "unknown device 'h1000'"),
    (["--to", ","], "--to names no device"),
    (["--to", "h100-sxm", "--memory-budget", "lots"], "--memory-budget"),
])
def test_a_mistake_is_one_line_and_status_2(record_file: Path, argv: list[str], said: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["project", str(record_file), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err


def test_a_bad_devices_file_or_a_record_of_another_kind_is_refused(
        record_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "d.toml"
    bad.write_text("not = [toml")
    assert main(["project", str(record_file), "--to", "l4", "--devices", str(bad)]) == 2
    assert "is not valid TOML" in capsys.readouterr().err
    sweep = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "sweep-v2.json"
    assert main(["project", str(sweep), "--to", "l4"]) == 2
    assert "is a sweep record" in capsys.readouterr().err


@pytest.mark.subprocess  # a fresh interpreter, to see what it imports
def test_project_never_imports_torch(record_file: Path) -> None:
    probe = ("import sys\nfrom attnprof.cli.main import main\n"
             "status = main(sys.argv[1:])\nprint(status, 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe, "project", str(record_file),
                           "--to", "a100-80gb"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stdout.split()[-2:] == ["0", "False"], (done.stdout, done.stderr)


@pytest.mark.slow  # limits bisects on real runs in worker processes
def test_the_largest_seq_on_this_machine_agrees_with_limits(
        record_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    projected, found = tmp_path / "p.json", tmp_path / "l.json"
    assert main(["project", str(record_file), "--to", "here", "--memory-budget", "64MiB",
                 "--json", str(projected)]) == 0
    assert main(["limits", "-v", "naive", "--mode", "forward", "--memory-budget", "64MiB",
                 "--max", "2048", "--batch", "1", "--heads", "4", "--head-dim", "64",
                 "--no-store", "--json", str(found)]) == 0
    capsys.readouterr()
    (row,) = [r for r in json.loads(projected.read_text())["rows"] if r["variant"] == "naive"]
    (ceiling,) = json.loads(found.read_text())["ceilings"]
    # within one bisection step (64) of what real runs found
    assert abs(row["largest_seq_estimate"] - ceiling["largest"]) <= 64, (row, ceiling)
