"""Durable sweeps: a sweep killed mid-way (SIGINT, SIGTERM, SIGKILL) keeps every finished
point, and ``--resume`` runs only the missing ones, ending where an uninterrupted run
ends; a resume with other settings or on another environment is refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.sweep import SweepRecord

ARGS = ["sweep", "--seq", "16,32", "--batch", "1", "--heads", "2", "--head-dim", "16",
        "--variants", "naive,sdpa", "--min-time", "0.01", "--rounds", "1"]


def _outcome(record: SweepRecord) -> list[tuple[object, ...]]:
    """What two runs of one sweep must agree on: each point's workload and statuses."""
    return [(p.index, p.workload, [(r.variant, r.status) for r in p.results])
            for p in record.ordered_points()]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> SweepRecord:
    path = tmp_path_factory.mktemp("whole") / "sweep.json"
    assert main([*ARGS, "--json", str(path)]) == 0
    return SweepRecord.load(path)


def _points_in(path: Path) -> int:
    try:
        return len(json.loads(path.read_text())["points"])
    except (OSError, ValueError, KeyError):
        return 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=lambda s: signal.Signals(s).name)
def test_a_killed_sweep_resumes_with_only_the_missing_points(
        sig: int, tmp_path: Path, uninterrupted: SweepRecord) -> None:
    path = tmp_path / "sweep.json"
    proc = subprocess.Popen([sys.executable, "-m", "attnprof", *ARGS, "--json", str(path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            # SIGINT as a terminal gives it, even to a suite run in the
                            # background of a script (where it is ignored, and inherited)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while _points_in(path) < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=60)
    partial = SweepRecord.load(path)  # a whole record, whatever the signal hit
    kept = len(partial.points)
    assert partial.status == "partial" and kept == 1, stderr.decode()
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + sig  # 130 for Ctrl-C, 143 for SIGTERM (issue 17)
        assert f"continue with --resume {path}" in stderr.decode()

    assert main([*ARGS, "--resume", str(path)]) == 0
    final = SweepRecord.load(path)
    assert final.status == "complete" and final.run_id == partial.run_id
    assert _outcome(final) == _outcome(uninterrupted)
    # The points that had finished were kept as they were (their samples too), not re-run.
    assert final.ordered_points()[:kept] == partial.ordered_points()
    assert final.fits and len(final.fits) == len(uninterrupted.fits)


def test_resume_refuses_other_settings_or_another_environment(
        tmp_path: Path, uninterrupted: SweepRecord, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.json"
    uninterrupted.save(path)
    assert main([*ARGS, "--min-time", "0.02", "--resume", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--resume: this command's settings differ" in err and "\n" not in err
    # Points measured on one thread (the CPU default) are not resumed on every core.
    assert uninterrupted.settings.threads == 1
    assert all(p.environment is not None and p.environment.threads == 1
               for p in uninterrupted.points)
    assert main([*ARGS, "--threads", "all", "--resume", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--resume: this command's settings differ" in err and "\n" not in err
    assert main(["sweep", "--seq", "16,128", "--resume", str(path)]) == 2
    assert "this command's grid differs from the record's" in capsys.readouterr().err
    data = json.loads(path.read_text())
    data["environment"]["torch"] = "1.0.0"
    path.write_text(json.dumps(data))
    assert main(["sweep", "--resume", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--resume: the environment differs (torch" in err and "'1.0.0'" in err
    assert json.loads(path.read_text()) == data  # refused before anything was written


def test_resuming_a_complete_sweep_runs_nothing(tmp_path: Path,
                                                uninterrupted: SweepRecord) -> None:
    path = tmp_path / "sweep.json"
    uninterrupted.save(path)
    started = time.monotonic()
    assert main(["sweep", "--resume", str(path)]) == 0  # everything from the record
    again = SweepRecord.load(path)
    assert again.points == uninterrupted.points
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_resume_runs_under_the_recorded_limits_and_keeps_every_answer(
        tmp_path: Path, failing: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from attnprof.cli.main import build_parser
    from attnprof.cli.sweep_args import executor_from_args, plan_from_args

    path = tmp_path / "sweep.json"
    hangs, oom = f"{failing}:hangs_at_32_while_asked", f"{failing}:oom_always"
    argv = ["sweep", "--seq", "16,32", "--batch", "1", "--heads", "2", "--head-dim", "16",
            "--variants", f"sdpa,{hangs},{oom}", "--min-time", "0.01", "--rounds", "1"]
    monkeypatch.setenv("ATTNPROF_TEST_HANG", "1")
    assert main([*argv, "--point-timeout", "5", "--worker-memory", "1GiB",
                 "--json", str(path)]) == 3  # a row timed out
    first = SweepRecord.load(path)
    assert first.limits is not None
    assert (first.limits.point_timeout_s, first.limits.worker_memory_bytes) == (5.0, 1 << 30)
    before = first.ordered_points()
    assert [r.status for r in before[1].results] == ["ok", "timeout", "skipped"]

    # A resume without the flags runs under the record's limits, not the defaults ...
    args = build_parser().parse_args(["sweep", "--resume", str(path)])
    executor = executor_from_args(args, plan_from_args(args, first))
    assert (executor.timeout_s, executor.memory_limit_bytes) == (5.0, 1 << 30)  # type: ignore[attr-defined]
    # ... and refuses other ones, before anything runs.
    assert main(["sweep", "--resume", str(path), "--worker-memory", "2GiB"]) == 2
    err = capsys.readouterr().err
    assert "this command's limits differ from the record's" in err and "1.0 GiB in" in err

    # Only the (variant, point) pair that timed out runs again; every answer is kept as it
    # was, samples and all.
    monkeypatch.delenv("ATTNPROF_TEST_HANG")
    assert main(["sweep", "--resume", str(path)]) == 0
    after = SweepRecord.load(path).ordered_points()
    assert after[0] == before[0]
    assert after[1].results[0] == before[1].results[0]  # sdpa: not rerun
    assert after[1].results[2] == before[1].results[2]  # oom_always: still inferred
    assert after[1].results[1].status == "ok" and after[1].results[1].variant == hangs
    assert after[1].ceilings == before[1].ceilings
