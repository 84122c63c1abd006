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
        assert proc.returncode == 130
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
    assert main(["sweep", "--seq", "16,128", "--resume", str(path)]) == 2
    assert "grid differ" in capsys.readouterr().err
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
