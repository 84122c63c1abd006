"""A contended capture is marked, a quiet one is not (issue 28, acceptance 4).

Both captures are real: a small training loop pinned to one CPU, profiled with
torch.profiler (``training_loop.py``), run as its own process. The contended one has a
spinning process pinned to the same CPU for its active steps, so the loop gets half of
it: contention as large and as certain as it gets. The quiet one runs in a scheduling
group of its own with the highest weight (where the system allows it), so the other jobs
of a shared machine leave it alone. Each capture reports Linux's own count of the time
its thread waited for a CPU, which is what the trace-only verdict is held to.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.knowledge.capture_noise import CONTENDED

LOOP = Path(__file__).with_name("training_loop.py")


def _capture(folder: Path, *flags: str) -> tuple[Path, dict]:
    out = folder / "trace.json"
    done = subprocess.run([sys.executable, str(LOOP), str(out), *flags], capture_output=True,
                          text=True, timeout=300, check=True)
    return out, json.loads(done.stdout.strip().splitlines()[-1])


def _analyze(trace: Path, tmp: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    record = tmp / "analysis.json"
    done = subprocess.run([sys.executable, "-m", "attnprof", "analyze", str(trace), "--json",
                           str(record), "--no-store", "--top", "5"],
                          capture_output=True, text=True, timeout=300, cwd=tmp)
    return done, json.loads(record.read_text())


@pytest.fixture(scope="module")
def contended(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    if sys.platform != "linux":
        pytest.skip("pins with os.sched_setaffinity (Linux)")
    return _capture(tmp_path_factory.mktemp("contended"), "--busy", "--own-group")


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A capture that was quiet by measures other than the trace: Linux counted its thread
    waiting for a CPU under 5% of the time, and its steps took the same time within 25% by
    the loop's own clock. A VM's host can still stall a step where the guest sees no wait
    (one capture in five here): such a capture is retaken, as ``model`` retakes its own."""
    if sys.platform != "linux":
        pytest.skip("pins with os.sched_setaffinity (Linux)")
    said = []
    for attempt in range(3):
        trace, truth = _capture(tmp_path_factory.mktemp(f"quiet{attempt}"), "--own-group")
        wait, steps = truth["wait_fraction"], truth["step_s"]
        if (wait is None or wait < CONTENDED) and max(steps) < 1.25 * min(steps):
            return trace, truth
        said.append(f"wait {wait}, steps {', '.join(f'{s * 1e3:.1f}' for s in steps)} ms")
    pytest.skip("no capture was quiet (other jobs held the CPU; no scheduling group of "
                "its own here?): " + "; ".join(said))


def test_a_contended_capture_is_marked_in_output_record_and_status(
        contended: tuple[Path, dict], tmp_path: Path) -> None:
    trace, truth = contended
    if truth["wait_fraction"] is not None:  # Linux counted it: the contention is real
        assert truth["wait_fraction"] > 4 * CONTENDED
    done, record = _analyze(trace, tmp_path)
    assert done.returncode == 3, done.stderr
    assert "taken while other work held their CPUs" in done.stderr
    assert "‡ contended" in done.stdout  # the region's figures are marked
    assert "time per step ‡" in done.stdout and "phases of a step ‡" in done.stdout
    report = record["reports"][0]
    contention = report["contention"]
    assert contention["marked"] and contention["region"] == "ProfilerStep"
    # Read from the trace alone, the wait is near Linux's own count of it (a floor: a wait
    # between two steps, or spread thin over many ops, is in no op's time; above it by up to
    # 0.3: an op that shares a core with the spinner also runs slower while it runs, from
    # the caches they share, which no run-queue count sees; 0.64 against 0.50 in one full
    # suite run, 0.73 against 0.50 in a clean-clone CI run beside other work).
    assert contention["median_stalled_fraction"] > 2 * CONTENDED
    if truth["wait_fraction"] is not None:
        assert (truth["wait_fraction"] - 0.3 < contention["median_stalled_fraction"]
                < truth["wait_fraction"] + 0.3)
    assert contention["stalled_ops"], "the ops that stalled are named"
    finding = next(f for f in report["findings"] if f["rule"] == "contended-trace")
    assert finding["severity"] == "warning" and "retake" in finding["fix"]


def test_a_quiet_capture_is_not_marked(quiet: tuple[Path, dict], tmp_path: Path) -> None:
    trace, _ = quiet
    done, record = _analyze(trace, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "contended" not in done.stdout
    report = record["reports"][0]
    assert not report["contention"]["marked"]
    assert report["contention"]["median_stalled_fraction"] < CONTENDED
    assert not [f for f in report["findings"] if f["rule"] == "contended-trace"]
    assert "3 steps, " in done.stdout
