"""Worker scratch folders outlive no run: a worker killed mid-run leaves nothing (its parent
removes the folder), and a parent killed with SIGKILL leaves a folder the next run removes
(``attnprof.scratch``), never one whose parent still runs, another user's, or a link."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from attnprof.scratch import WORKER_PREFIX, remove_orphaned

TINY = ["--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "8", "--min-time",
        "0.01", "--no-store", "--executor", "process"]
SPINS = "def attn(q, k, v, **kw):\n    while True:\n        pass\n"


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _compare(tmp: Path, cwd: Path, *variants: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "attnprof", "compare", *TINY,
                             "--variants", ",".join(variants)],
                            cwd=cwd, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(tmp)},
                            **popen)  # type: ignore[call-overload]


def test_a_parent_killed_with_sigkill_leaves_a_folder_the_next_run_removes(
        tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "spin.py").write_text(SPINS)
    # The parent and its worker, killed together mid-variant (as the OOM killer or a
    # job's hard stop would): no clean-up runs anywhere.
    run = _compare(tmp, tmp_path, "spin.py:attn", start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(tmp.glob(f"{WORKER_PREFIX}*")) and time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate(timeout=60)
    (left,) = tmp.glob(f"{WORKER_PREFIX}*")
    assert left.name.startswith(f"{WORKER_PREFIX}{run.pid}-")
    # The next run's first worker removes it, and leaves nothing of its own.
    after = _compare(tmp, tmp_path, "sdpa")
    _, err = after.communicate(timeout=600)
    assert after.returncode == 0, err
    assert not list(tmp.glob(f"{WORKER_PREFIX}*")), list(tmp.iterdir())


def test_only_folders_of_parents_that_are_gone_are_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    orphan = tmp_path / f"{WORKER_PREFIX}{dead}-abc"
    (orphan / "traces").mkdir(parents=True)
    (orphan / "traces" / "t.json").write_text("{}")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    (orphan / "link").symlink_to(outside)  # removed as a link, never followed
    alive = tmp_path / f"{WORKER_PREFIX}{os.getpid()}-def"  # this process runs
    alive.mkdir()
    link = tmp_path / f"{WORKER_PREFIX}{dead}-link"  # a link named like one: left
    link.symlink_to(outside)
    stray = tmp_path / f"{WORKER_PREFIX}notapid"
    stray.mkdir()
    file = tmp_path / f"{WORKER_PREFIX}{dead}-file"
    file.write_text("")
    assert remove_orphaned(str(tmp_path)) == [orphan.name]
    assert not orphan.exists() and (outside / "keep").read_text() == "kept"
    assert alive.is_dir() and link.is_symlink() and stray.is_dir() and file.is_file()
    assert remove_orphaned(str(tmp_path / "absent")) == []
