"""The ``attnprof`` command as a user runs it: a real subprocess, real exit codes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from attnprof.record.compare import RunRecord

SMALL = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16",
         "--min-time", "0.01"]


def attnprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attnprof", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=_sigint_default)


def _sigint_default() -> None:
    """Ctrl-C as a terminal gives it: a test run in the background of a script has SIGINT
    ignored, and the ignore would pass on to attnprof."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--heads", "8", "--kv-heads", "3"], "--kv-heads 3 does not divide --heads 8"),
        (["--seq", "0"], "--seq must be a positive integer, got 0"),
        (["--device", "cuda"], "--device cuda"),
        (["--variants", "nope"], "unknown variant 'nope'"),
        (["--variants", "missing/attn.py:fn"], "file 'missing/attn.py' does not exist"),
        (["--dtype", "fp8"], "unknown dtype 'fp8'"),
        (["--seq", "abc"], "invalid int value: 'abc'"),
        (["--mode", "train"], "invalid choice: 'train'"),
        (["--min-time", "0"], "--min-time must be positive"),
        (["--rounds", "0"], "--rounds must be a positive integer, got 0"),
        (["--processes", "0"], "--processes must be a positive integer, got 0"),
        (["--processes", "1000"], "--processes 1000 is more than attnprof runs (100)"),
        (["--batch", "100000", "--seq", "100000"], "GiB"),
    ],
)
def test_user_mistakes_exit_2_with_one_line_and_no_output(args: list[str], needle: str,
                                                          tmp_path: Path) -> None:
    import torch

    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out = tmp_path / "out.json"
    result = attnprof("compare", *args, "--json", str(out), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("attnprof: error: ") and needle in lines[0]
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_path_fails_before_measuring(tmp_path: Path) -> None:
    result = attnprof("--json", str(tmp_path / "no" / "dir.json"), cwd=tmp_path)
    assert result.returncode == 2
    assert "does not exist; create it first" in result.stderr


def test_compare_prints_the_table_and_writes_the_record(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = attnprof("compare", *SMALL, "--variants", "naive,sdpa-efficient",
                      "--json", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "naive" in result.stdout and "unsupported" in result.stdout
    assert "4·B·H·Sq·Sk·D" in result.stdout  # the FLOP convention is stated
    assert "USDT" not in result.stderr  # Kineto's start/stop chatter is filtered
    record = RunRecord.load(out)
    assert [r.variant for r in record.results] == ["naive", "sdpa-efficient"]
    assert record.status == "complete"


def test_bare_attnprof_runs_compare(tmp_path: Path) -> None:
    result = attnprof(*SMALL, "--variants", "sdpa", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "attnprof compare" in result.stdout and "sdpa" in result.stdout


def test_list_variants(tmp_path: Path) -> None:
    result = attnprof("compare", "--list-variants", cwd=tmp_path)
    assert result.returncode == 0
    for name in ("naive-inplace", "sdpa-cudnn", "flex-eager", "gqa-repeat-kv", "mha-module",
                 "paged@16", "paged-flex@16", "flash-attn", "xformers", "flashinfer"):
        assert name in result.stdout


INTERRUPTING = '''
import os
import signal

import torch


def stop(q, k, v, **kwargs):
    # Runs normally while being built, warmed up and timed; Ctrl-C arrives during its
    # memory profile, after the variants before it have finished.
    if torch.autograd.profiler._is_profiler_enabled:
        os.kill(os.getpid(), signal.SIGINT)
    return q * 1


def stop_at_once(q, k, v, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
'''


def test_interrupted_run_keeps_what_finished(tmp_path: Path,
                                             left_in: Callable[[Path], list[str]]) -> None:
    (tmp_path / "stopper.py").write_text(INTERRUPTING)
    out = tmp_path / "run.json"
    result = attnprof(*SMALL, "--variants", "naive,sdpa,stopper.py:stop,naive-inplace",
                      "--json", str(out), cwd=tmp_path)
    assert result.returncode == 130
    assert "finished variants are in" in result.stderr
    data = json.loads(out.read_text())
    assert data["status"] == "partial"
    assert [r["variant"] for r in data["results"]] == ["naive", "sdpa"]
    assert left_in(tmp_path) == ["run.json", "stopper.py"]


def test_interrupted_before_anything_finished_writes_nothing(
        tmp_path: Path, left_in: Callable[[Path], list[str]]) -> None:
    # Variants are timed together once all are warmed up, so a Ctrl-C while warming up
    # leaves nothing finished: no file, and the message says so.
    (tmp_path / "stopper.py").write_text(INTERRUPTING)
    out = tmp_path / "run.json"
    result = attnprof(*SMALL, "--variants", "naive,stopper.py:stop_at_once",
                      "--json", str(out), cwd=tmp_path)
    assert result.returncode == 130
    assert "no variant had finished" in result.stderr
    assert left_in(tmp_path) == ["stopper.py"]


def test_processes_each_keep_their_median_and_a_diff_tests_them(tmp_path: Path) -> None:
    """``--processes 2``: two fresh workers, each the whole comparison; the row keeps both
    medians beside all their samples, and a diff of two such runs tests the medians."""
    out = tmp_path / "p.json"
    done = attnprof("compare", "--variants", "naive,sdpa", *SMALL, "--processes", "2",
                    "--json", str(out), "--no-store", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = RunRecord.load(out)
    assert record.settings.plan.processes == 2
    for row in record.results:
        assert row.status == "ok" and row.latency_ms is not None
        assert len(row.latency_ms.process_medians) == 2, row.variant
        assert row.latency_ms.count == len(row.latency_ms.samples)
        assert min(row.latency_ms.process_medians) <= row.latency_ms.median <= max(
            row.latency_ms.process_medians)
        assert any("measured in 2 processes of 2" in n for n in row.notes)
    diffed = attnprof("diff", str(out), str(out), "--store", str(tmp_path / "runs.db"),
                      "--json", str(tmp_path / "d.json"), cwd=tmp_path)
    assert diffed.returncode == 0, diffed.stderr
    assert "Welch" in diffed.stdout
    rows = json.loads((tmp_path / "d.json").read_text())["rows"]
    tested = [m for row in rows for m in row["metrics"] if m["metric"] == "latency_ms"]
    assert len(tested) == 2
    assert all(m["test"] == "processes" and len(m["old_processes"]) == 2 for m in tested)
