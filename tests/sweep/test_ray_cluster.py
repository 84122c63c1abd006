"""The README's Ray recipe, as written, against a cluster ``ray start --head`` starts with
Ray's authentication as shipped (a token exists, so token authentication is on): without
``RAY_AUTH_MODE=token`` the sweep is refused at once in one line that says what to set and
names the flag or variable the address came from; with it, the sweep runs there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnprof.record.sweep import SweepRecord

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

RAY = str(Path(sys.executable).parent / "ray")
SWEEP = ["sweep", "--executor", "ray", "--seq", "16,32", "--batch", "1", "--heads", "2",
         "--head-dim", "16", "--variants", "sdpa", "--min-time", "0.01", "--rounds", "1"]


@pytest.fixture(scope="module")
def head() -> Iterator[tuple[str, dict[str, str]]]:
    """A head node started as the README says (plus --block, so that stopping this one
    process stops its cluster), in a home of its own holding a token; its address and the
    environment a user's shell would have."""
    # A short path: Ray's Unix sockets live under the temp dir, and a socket path is
    # limited to 107 bytes.
    home = tempfile.mkdtemp(prefix="ar", dir="/tmp")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env.update(HOME=home, RAY_USAGE_STATS_ENABLED="0",
               RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")
    subprocess.run([RAY, "get-auth-token", "--generate"], env=env, check=True,
                   capture_output=True, timeout=120)
    proc = subprocess.Popen(
        [RAY, "start", "--head", "--block", "--port", str(_free_port()), "--num-cpus", "2",
         "--include-dashboard", "false", "--temp-dir", f"{home}/r"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    try:
        address = _address_printed(lines, proc)
        yield address, env
    finally:
        proc.terminate()  # ray start --block stops the processes it started
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(home, ignore_errors=True)


def _free_port() -> int:
    """A TCP port nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def _address_printed(lines: list[str], proc: subprocess.Popen[str]) -> str:
    """The address ``ray start --head`` tells other nodes to join."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        for line in list(lines):
            if "ray start --address='" in line:
                return line.split("--address='", 1)[1].split("'", 1)[0]
        if proc.poll() is not None:
            raise RuntimeError("ray start --head ended: " + "".join(lines)[-2000:])
        time.sleep(0.2)
    raise RuntimeError("ray start --head printed no address: " + "".join(lines)[-2000:])


def _attnprof(argv: list[str], env: dict[str, str], cwd: Path
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attnprof", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_without_the_token_the_sweep_is_refused_in_one_line(
        head: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    address, env = head
    for how, extra, argv in (("RAY_ADDRESS", {"RAY_ADDRESS": address}, SWEEP),
                             ("--ray-address", {}, [*SWEEP, "--ray-address", address])):
        done = _attnprof([*argv, "--json", "s.json"], {**env, **extra}, tmp_path)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()  # Ray's retry warnings kept off
        assert line.startswith(f"attnprof: error: {how} {address}: the Ray cluster requires")
        assert "set RAY_AUTH_MODE=token" in line and "ray get-auth-token" in line
        assert not (tmp_path / "s.json").exists()


def test_the_readme_recipe_runs_with_the_token_set(head: tuple[str, dict[str, str]],
                                                   tmp_path: Path) -> None:
    address, env = head
    recipe = {**env, "RAY_ADDRESS": address, "RAY_AUTH_MODE": "token"}
    done = _attnprof([*SWEEP, "--json", "s.json"], recipe, tmp_path)
    assert done.returncode == 0, done.stderr
    record = SweepRecord.load(tmp_path / "s.json")
    assert record.status == "complete" and record.executor == "ray"
    assert all(p.node and p.results[0].status == "ok" for p in record.points)
