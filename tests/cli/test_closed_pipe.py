"""Issue 30, item 8: a reader that leaves early (``attnprof show RUN | head -1``) ends the
printing quietly: no BrokenPipeError traceback, the run is stored, the exit status is the
run's own. Real pipes, through the real command: the pipe is made one page small (Linux
lets it shrink to 4 KiB), so that a command printing more than that waits for the reader,
who reads one line and closes, as ``head -1`` does; or closes before reading anything."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
TINY = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16", "--min-time",
        "0.05"]


def _attnprof_reader_leaves(args: list[str], cwd: Path, *, read_a_line: bool = True,
                            merged: bool = False) -> tuple[int, bytes, str]:
    """Run ``attnprof ARGS`` with stdout a 4 KiB pipe whose reader reads one line (or
    none) and closes it; its exit status, the line read and its stderr (``merged``:
    stderr goes into the same pipe, as ``2>&1 | head -1``)."""
    read, write = os.pipe()
    fcntl.fcntl(write, F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([sys.executable, "-m", "attnprof", *args], cwd=cwd,
                            stdout=write, stderr=write if merged else subprocess.PIPE,
                            text=True)
    os.close(write)
    line = b""
    if read_a_line:
        while not line.endswith(b"\n"):
            byte = os.read(read, 1)
            if not byte:
                break
            line += byte
    os.close(read)  # the reader is gone
    _, err = proc.communicate(timeout=600)
    return proc.returncode, line, err or ""


def _stored(store: Path) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "attnprof", "runs", "--json", "--store",
                           str(store)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _quiet(err: str) -> None:
    assert "Traceback" not in err and "BrokenPipe" not in err and "Exception" not in err, err


def test_analyze_into_a_closed_pipe(tmp_path: Path, public_traces: Path) -> None:
    store = tmp_path / "runs.db"
    trace = str(public_traces / "a100_alexnet_inference.json.gz")
    code, line, err = _attnprof_reader_leaves(["analyze", trace, "--store", str(store)],
                                              tmp_path)
    assert line.startswith(b"trace ")  # the first line was read
    assert code == 0, err  # analyze's own status: every file read (1 would say unreadable)
    _quiet(err)
    (run,) = _stored(store)  # stored after its view stopped being read
    assert run["kind"] == "analyze"


def test_analyze_with_stderr_into_the_same_closed_pipe(tmp_path: Path,
                                                       public_traces: Path) -> None:
    """``2>&1 | head -1``, on a folder whose note goes to stderr after the view."""
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "t.json.gz").symlink_to(public_traces / "a100_alexnet_inference.json.gz")
    (folder / "README.txt").write_text("not a trace\n")
    store = tmp_path / "runs.db"
    code, line, _ = _attnprof_reader_leaves(["analyze", str(folder), "--store", str(store)],
                                            tmp_path, merged=True)
    assert line
    assert code == 0
    (run,) = _stored(store)
    assert run["kind"] == "analyze"


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_show_into_a_closed_pipe(extra: list[str], tmp_path: Path,
                                 public_traces: Path) -> None:
    store = tmp_path / "runs.db"
    trace = str(public_traces / "a100_alexnet_inference.json.gz")
    done = subprocess.run([sys.executable, "-m", "attnprof", "analyze", trace, "--store",
                           str(store)], capture_output=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = _stored(store)
    # The JSON is one line: its reader leaves before it (as `| head -c 0` would).
    code, line, err = _attnprof_reader_leaves(
        ["show", run["run_id"], "--top", "100", *extra, "--store", str(store)], tmp_path,
        read_a_line=not extra)
    assert line or extra, err
    assert code == 0, err
    _quiet(err)


def test_compare_into_a_closed_pipe(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    store = tmp_path / "runs.db"
    code, _, err = _attnprof_reader_leaves(["compare", "--variants", "sdpa-math", *TINY,
                                            "--store", str(store)], tmp_path,
                                           read_a_line=False)
    assert code == 0, err  # compare's own status (1 would say a budget failed)
    _quiet(err)
    (run,) = _stored(store)
    assert run["kind"] == "compare" and run["status"] == "complete"
