"""``attnprof env`` measures this machine once and caches it in the store; comparisons
reuse the cached ceilings; and the history commands (runs, show, diff, env from its cache)
never import torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = ["--batch", "1", "--heads", "2", "--seq", "32", "--head-dim", "16",
        "--min-time", "0.01"]

#: Runs the CLI in this interpreter and fails if torch was imported on the way.
NO_TORCH = """
import sys
from attnprof.cli.main import main
status = main(sys.argv[1:])
assert "torch" not in sys.modules, "torch was imported"
sys.exit(status)
"""


def attnprof(*args: str, cwd: Path, torch_free: bool = False
             ) -> subprocess.CompletedProcess[str]:
    command = ([sys.executable, "-c", NO_TORCH] if torch_free
               else [sys.executable, "-m", "attnprof"])
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def cached(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("env")
    done = attnprof("env", "--store", "s.db", "--device", "cpu", "--dtypes", "float32",
                    "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    (profile,) = json.loads(done.stdout)
    assert set(profile["ceilings"]) == {"float32"}
    assert profile["ceilings"]["float32"]["matmul_tflops_per_s"] > 0
    return root


def test_env_from_the_cache_imports_no_torch(cached: Path) -> None:
    first = json.loads(attnprof("env", "--store", "s.db", "--json", cwd=cached).stdout)
    done = attnprof("env", "--store", "s.db", cwd=cached, torch_free=True)
    assert done.returncode == 0, done.stderr
    assert "cached" in done.stdout and first[0]["measured"] in done.stdout
    assert "measuring" not in done.stderr


def test_compare_reuses_the_cached_ceilings(cached: Path) -> None:
    done = attnprof("compare", "--variants", "sdpa", *TINY, "--store", "s.db", "--json",
                    "run.json", cwd=cached)
    assert done.returncode == 0, done.stderr
    record = json.loads((cached / "run.json").read_text())
    (profile,) = json.loads(attnprof("env", "--store", "s.db", "--json", cwd=cached).stdout)
    assert record["ceilings"] == profile["ceilings"]["float32"]
    assert f"measured {profile['measured']} (attnprof env)" in done.stdout
    # Without the cache (--no-store), the run measures its own.
    done = attnprof("compare", "--variants", "sdpa", *TINY, "--no-store", "--json",
                    "own.json", cwd=cached)
    assert json.loads((cached / "own.json").read_text())["ceilings"]["measured"] is None


def test_ceilings_are_reused_on_their_own_thread_count_only(cached: Path) -> None:
    # env measured on the default (one thread on a CPU); a matmul on every core would read
    # a share of a one-thread ceiling up to twice too high, so --threads all measures its own.
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: every thread count is the same")
    (profile,) = json.loads(attnprof("env", "--store", "s.db", "--json", cwd=cached).stdout)
    assert profile["environment"]["threads"] == 1
    done = attnprof("compare", "--variants", "sdpa", *TINY, "--threads", "all", "--store",
                    "s.db", "--json", "all.json", cwd=cached)
    assert done.returncode == 0, done.stderr
    record = json.loads((cached / "all.json").read_text())
    assert record["environment"]["threads"] > 1
    assert record["ceilings"]["measured"] is None  # measured in the run, on its threads


def test_history_commands_import_no_torch(cached: Path, public_traces: Path) -> None:
    done = attnprof("compare", "--variants", "sdpa", *TINY, "--store", "s.db", "--label",
                    "x", cwd=cached)
    assert done.returncode == 0, done.stderr
    for args in (["runs", "--store", "s.db"], ["show", "x", "--store", "s.db"],
                 ["diff", "x", "x", "--store", "s.db", "--fail-on-regression", "5"],
                 ["diff", str(public_traces / "cpu_only.json.gz"),
                  str(public_traces / "cpu_only.json.gz"), "--store", "s.db"]):
        done = attnprof(*args, cwd=cached, torch_free=True)
        assert done.returncode == 0, (args, done.stderr)
