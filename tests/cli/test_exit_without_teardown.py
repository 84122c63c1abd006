"""``attnprof analyze`` ends without the interpreter's teardown (issue 32: start-up and exit
are most of a small trace's analysis), but not without what the ordinary exit does for the
user: atexit hooks run, and what they and the command printed reaches the pipe."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_CODE = """
import atexit, sys
from attnprof.cli.main import console_main
atexit.register(lambda: print("hook ran", flush=False))
sys.argv = ["attnprof", "analyze", sys.argv[1], "--json", sys.argv[2], "--no-store"]
console_main()
"""


def test_atexit_hooks_run_and_output_is_flushed(public_traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    run = subprocess.run([sys.executable, "-c", _CODE, str(public_traces / "cpu_only.json.gz"),
                          str(out)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip().endswith("hook ran")
    assert "analysis written to" in run.stdout
    assert json.loads(out.read_text())["kind"] == "analyze"


def test_a_failed_run_keeps_its_status(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    run = subprocess.run([sys.executable, "-c", _CODE, str(missing), str(tmp_path / "a.json")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 2
    assert run.stderr.startswith("attnprof: error:") and "hook ran" in run.stdout
