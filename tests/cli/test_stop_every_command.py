"""Every command stops the same way (issue 17): a stop signal in the middle of any command
ends it through the one handler of :mod:`attnprof.signals` — exit status 128 + the signal
(143 for SIGTERM, 129 for SIGHUP, 130 for Ctrl-C), one line naming the signal, no
traceback and no temporary file left beside an output.

Real subprocesses, real signals. Each command is caught at a moment every command has, and
where it is doing its own work: its first write to stdout, held up by a pipe the test has
filled beforehand (stdout unbuffered, so the write happens where the command prints, not at
exit). What a stop keeps of a run's record is tested per command beside it
(``test_signals.py`` for compare, ``tests/sweep/test_resume.py`` for sweep).
"""

from __future__ import annotations

import fcntl
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from attnprof.cli.main import COMMANDS

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"
TINY = ["--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "16", "--min-time",
        "0.01", "--rounds", "1"]

#: How each command is run: small and quick, outputs into the test's folder. ``{trace}``
#: is a real CPU trace, ``{record}`` a record file.
ARGV: dict[str, list[str]] = {
    "compare": ["compare", *TINY, "--variants", "naive,sdpa", "--json", "out.json"],
    "profile": ["profile", *TINY, "--out", "traces", "--json", "out.json", "naive"],
    "analyze": ["analyze", "{trace}", "--json", "out.json", "--executor", "inline"],
    "check": ["check", "--expect", "expect.toml", "{trace}"],
    "model": ["model", "llama", "--layers", "1", "--hidden", "32", "--heads", "2", "--seq", "8",
              "--batch", "1", "--attn", "eager", "--phase", "prefill", "--min-time", "0.01",
              "--json", "out.json"],
    "sweep": ["sweep", *TINY, "--variants", "naive", "--json", "out.json"],
    "limits": ["limits", "--variants", "naive", "--mode", "forward", "--batch", "1",
               "--heads", "2", "--head-dim", "16", "--max", "128", "--step", "64",
               "--min-time", "0.01"],
    "recommend": ["recommend", *TINY, "--variants", "naive", "--json", "out.json"],
    "runs": ["runs"],
    "show": ["show", "{record}"],
    "report": ["report", "-o", "report.html", "{record}"],
    "diff": ["diff", "{record}", "{record}", "--json", "out.json"],
    "env": ["env", "--dtypes", "fp32"],
    "project": ["project", "{record}", "--to", "h100-sxm,mi300x", "--json", "out.json"],
}

EXPECT = '''title = "holds for any trace"

[per_forward]
kernels = { min = 0 }
'''

#: The ``write`` system call's number, for reading ``/proc/PID/syscall``.
_WRITE = {"x86_64": 1, "aarch64": 64}.get(platform.machine())


def test_every_command_has_a_stop_test() -> None:
    assert set(ARGV) == {c.NAME for c in COMMANDS}


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: the next write to it blocks."""
    read, write = os.pipe()
    flags = fcntl.fcntl(write, fcntl.F_GETFL)
    fcntl.fcntl(write, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    try:
        while True:
            os.write(write, b"-" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(write, fcntl.F_SETFL, flags)
    return read, write


def _writing_stdout(pid: int) -> bool:
    """Whether the process is blocked writing to its stdout (fd 1)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return len(fields) > 1 and fields[0] == str(_WRITE) and fields[1] == "0x1"


def _argv(command: str, folder: Path, trace: Path) -> list[str]:
    return [a.format(trace=trace, record=RECORDS / "compare-v1.json")
            for a in ARGV[command]]


def _stop(command: str, sig: signal.Signals, folder: Path, trace: Path) -> tuple[int, str]:
    """Run ``command`` until it blocks on its first write to stdout, send ``sig``, and
    return its exit status and stderr."""
    (folder / "expect.toml").write_text(EXPECT)
    read, write = _full_pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnprof", *_argv(command, folder, trace)], cwd=folder,
        stdout=write, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # SIGINT as a terminal gives it, even to a suite run in the background of a script.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(write)
    drained = threading.Thread(target=lambda: _drain(read), daemon=True)
    try:
        deadline = time.monotonic() + 300  # slow start-up on a loaded machine included
        while not _writing_stdout(proc.pid):
            if proc.poll() is not None:
                pytest.fail(f"{command} ended ({proc.returncode}) before printing: "
                            f"{proc.communicate()[1]}")
            assert time.monotonic() < deadline, f"{command} never printed"
            time.sleep(0.05)
        proc.send_signal(sig)
        drained.start()  # let whatever comes after the stop be written
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _drain(fd: int) -> None:
    with os.fdopen(fd, "rb") as pipe:
        while pipe.read(65536):
            pass


@pytest.fixture(scope="module")
def trace(public_traces: Path) -> Path:
    return public_traces / "cpu_only.json.gz"


def _stop_cases() -> list[tuple[str, signal.Signals]]:
    cases = [(name, signal.SIGTERM) for name in ARGV]
    # The three signals on a quick command: each one's own status.
    return [*cases, ("analyze", signal.SIGINT), ("analyze", signal.SIGHUP)]


@pytest.mark.skipif(_WRITE is None or not sys.platform.startswith("linux"),
                    reason="reads /proc/PID/syscall (Linux, x86_64 or aarch64)")
@pytest.mark.parametrize(("command", "sig"), _stop_cases(),
                         ids=[f"{c}-{s.name}" for c, s in _stop_cases()])
def test_a_stop_ends_every_command_alike(command: str, sig: signal.Signals, tmp_path: Path,
                                         trace: Path) -> None:
    status, err = _stop(command, sig, tmp_path, trace)
    assert status == 128 + sig, err
    said = "interrupted" if sig == signal.SIGINT else f"stopped by {sig.name}"
    assert f"attnprof: {said}" in err, err
    assert "Traceback" not in err, err
    # Outputs are whole or absent: nothing half-written beside them.
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]
