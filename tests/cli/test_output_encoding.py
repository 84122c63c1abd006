"""A terminal or pipe whose encoding cannot hold what attnprof prints (``·``, ``µ``, box
lines, a user's non-ASCII name) shows escapes, never a UnicodeEncodeError traceback at the
end of a finished run: ``PYTHONIOENCODING=ascii`` (as the fuzz campaign found) or Latin-1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TINY = ["compare", "--batch", "1", "--heads", "2", "--seq", "16", "--head-dim", "8",
        "--min-time", "0.01", "--variants", "naive,sdpa", "--no-store"]


def _run(argv: list[str], encoding: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "attnprof", *argv], cwd=cwd,
                          capture_output=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": "160"})


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_report_on_a_narrow_encoding_is_escaped_not_a_traceback(
        encoding: str, tmp_path: Path, public_traces: Path) -> None:
    out = tmp_path / "a.json"
    done = _run(["analyze", str(public_traces / "cpu_only.json.gz"), "--json", str(out)],
                encoding, tmp_path)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    done.stdout.decode(encoding)  # only what the encoding holds
    assert b"\\xb7" in done.stdout or "·".encode(encoding, "ignore") in done.stdout
    assert json.loads(out.read_text())["kind"] == "analyze"  # the record is whole UTF-8


def test_a_comparison_and_an_error_on_ascii(tmp_path: Path) -> None:
    done = _run(TINY, "ascii", tmp_path)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert b"naive" in done.stdout and b"sdpa" in done.stdout
    # A user's value in the one error line: escaped, the line still whole.
    done = _run(["analyze", "caf\u00e9.json"], "ascii", tmp_path)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.decode("ascii").strip().splitlines()
    assert line.startswith("attnprof: error:") and "caf\\xe9.json" in line, line
