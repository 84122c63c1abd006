"""A mistake in a measuring command's own flags is said before torch is imported: the
answer to ``compare --seq 0`` (or ``sweep --rounds 0``) took 2 s, all of it torch's import,
and now takes a tenth of that. (Mistakes only torch can judge, such as ``--device cuda``
without CUDA or an unknown variant name, still import it.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import sys
from attnprof.cli.main import main
status = main(sys.argv[1:])
print(status, "torch" in sys.modules)
"""


@pytest.mark.parametrize("command", ["compare", "profile", "check"])
@pytest.mark.parametrize(("flags", "said"), [
    (["--seq", "0"], "--seq must be a positive integer, got 0"),
    (["--heads", "8", "--kv-heads", "3"], "--kv-heads 3 does not divide --heads 8"),
    (["--dtype", "fp8"], "unknown dtype 'fp8'"),
    (["--head-dim", "1024"], "--head-dim 1024 is larger than any attention kernel"),
    (["--mode", "decode", "--min-time", "nan"], "--min-time must be positive"),
    (["--rounds", "0"], "--rounds must be a positive integer, got 0"),
    (["--threads", "0"], "--threads must be a positive number of threads or 'all'"),
])
def test_a_flag_mistake_is_said_without_importing_torch(command: str, flags: list[str],
                                                        said: str) -> None:
    expect = Path(__file__).resolve().parents[2] / "examples" / "expectations"
    extra = {"compare": [], "profile": ["sdpa"],
             "check": ["--expect", str(next(expect.glob("*.toml"))), "sdpa"]}[command]
    argv = [command, *flags, "--no-store", *extra]
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line


@pytest.mark.parametrize("command", ["sweep", "recommend"])
@pytest.mark.parametrize(("flags", "said"), [
    (["--seq", "16,32", "--heads", "8", "--kv-heads", "3"], "--kv-heads 3 does not divide"),
    (["--seq", "16", "--dtype", "fp8"], "unknown dtype 'fp8'"),
    (["--seq", "16", "--rounds", "0"], "--rounds must be a positive integer, got 0"),
    (["--seq", "16", "--min-time", "inf"], "--min-time must be positive"),
    (["--seq", "16", "--threads", "abc"], "--threads must be a positive number"),
    (["--seq", "16", "--point-timeout", "abc"], "--point-timeout 'abc' is not a duration"),
])
def test_a_sweeps_flag_mistake_is_said_without_importing_torch(command: str,
                                                               flags: list[str],
                                                               said: str) -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, command, *flags, "--no-store"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line


def test_a_huge_head_count_that_kv_heads_does_not_divide_is_said_at_once() -> None:
    # Listing every divisor of 10**12 ran for ever; past 65,536 heads the refusal says "a
    # divisor" instead.
    done = subprocess.run([sys.executable, "-c", _PROBE, "compare", "--heads",
                           str(10**12), "--kv-heads", "7", "--no-store"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["2", "False"], done.stderr
    assert f"use a divisor of {10**12}" in done.stderr
