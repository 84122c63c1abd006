"""SIGTERM and SIGHUP stop a run the way Ctrl-C does (issue 11, item 8).

Before, SIGTERM (``docker stop``, Slurm, CI runners) ended attnprof at once: the rows a
Ctrl-C would have saved were lost, and a kill during a write left a temporary file beside
its target. Real subprocesses, real signals.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

#: Runs normally while built, warmed up and timed; once its memory is profiled (after the
#: variants before it have finished and been saved), says so and waits to be stopped.
WAITS = '''
import os
import time

import torch


def waits(q, k, v, **kwargs):
    if torch.autograd.profiler._is_profiler_enabled:
        open(os.environ["ATTNPROF_TEST_MARKER"], "w").close()
        time.sleep(120)
    return q * 1
'''


def sigint_default() -> None:
    """In the child before exec: Ctrl-C as a terminal gives it. A test run started in the
    background of a script has SIGINT ignored, and the ignore would pass on to attnprof."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def under_nohup() -> None:
    """In the child before exec: what ``nohup`` does (SIGHUP ignored)."""
    sigint_default()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def start(tmp_path: Path, *extra: str,
          preexec: Callable[[], None] = sigint_default) -> tuple[subprocess.Popen[str], Path]:
    (tmp_path / "waits.py").write_text(WAITS)
    marker = tmp_path / "marker"
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnprof", "compare", "--batch", "1", "--heads", "2",
         "--seq", "32", "--head-dim", "16", "--min-time", "0.01",
         "--variants", "naive,sdpa,waits.py:waits,naive-inplace", "--json", "run.json",
         *extra],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "ATTNPROF_TEST_MARKER": str(marker)}, preexec_fn=preexec)
    deadline = time.monotonic() + 240
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the variant never started waiting"
        time.sleep(0.05)
    return proc, tmp_path / "run.json"


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129),
                                             (signal.SIGINT, 130)])
def test_a_stop_signal_keeps_the_finished_rows(sig: signal.Signals, status: int,
                                               tmp_path: Path,
                                               left_in: Callable[[Path], list[str]]) -> None:
    proc, out = start(tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    assert "finished variants are in run.json" in err
    record = json.loads(out.read_text())
    assert record["status"] == "partial"
    assert [r["variant"] for r in record["results"]] == ["naive", "sdpa"]
    assert left_in(tmp_path) == ["marker", "run.json", "waits.py"]


def test_under_nohup_a_hangup_does_not_stop_the_run(tmp_path: Path) -> None:
    # nohup's promise: a closed terminal does not end the run. SIGTERM still does.
    proc, out = start(tmp_path, preexec=under_nohup)
    proc.send_signal(signal.SIGHUP)
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["naive", "sdpa"]


def test_sigterm_to_the_parent_of_a_worker_keeps_the_finished_rows(tmp_path: Path) -> None:
    # docker stop signals PID 1 only: the parent hands the stop on to its worker, waits for
    # what it measured, and exits as SIGTERM asks.
    proc, out = start(tmp_path, "--executor", "process")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "stopped by SIGTERM" in err
    record = json.loads(out.read_text())
    assert [r["variant"] for r in record["results"]] == ["naive", "sdpa"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


WRITER = '''
import sys
import time

from attnprof.atomic import atomic_path
from attnprof.signals import exit_status, stop_signals_as_interrupts

with stop_signals_as_interrupts():
    try:
        with atomic_path(sys.argv[1]) as tmp:
            tmp.write_bytes(b"half of a new version")
            print("writing", flush=True)
            time.sleep(120)
    except KeyboardInterrupt as stop:
        sys.exit(exit_status(stop))
'''


def test_sigterm_during_a_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    target.write_text("the last complete version")
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    assert len(list(tmp_path.iterdir())) == 2  # the target and its temporary file
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]
    assert target.read_text() == "the last complete version"
