"""``attnprof.commands.project.run`` from Python: a comparison's rows bounded on each
device asked for, without torch; the JSON file only when asked for, and a mistake refused
before any folder is made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "compare-v2.json"

_PROBE = """
import json, sys
from attnprof.commands import project
result = project.run(project.ProjectRequest(target=sys.argv[1], to=("h100-sxm", "mi300x"),
                                            json=sys.argv[2]))
rows = [[r.variant, r.target, r.bound is not None or r.no_bound] for r in result.rows]
print(json.dumps({"rows": rows, "torch": "torch" in sys.modules}))
"""


def test_every_row_on_every_device_without_torch(tmp_path: Path) -> None:
    out = tmp_path / "projection.json"
    done = subprocess.run([sys.executable, "-c", _PROBE, str(RECORD), str(out)],
                          capture_output=True, text=True, timeout=120, check=True)
    said = json.loads(done.stdout)
    assert not said["torch"]
    pairs = {(variant, target) for variant, target, _ in said["rows"]}
    assert {v for v, _ in pairs} == {"naive", "sdpa"} and len(pairs) == len(said["rows"]) == 4
    # A bound, or the reason there is none (this record predates the traffic model: each
    # row says so rather than showing a compute-only bound as the bound).
    assert all(said_why for *_, said_why in said["rows"])
    written = json.loads(out.read_text())
    assert written["kind"] == "projection" and written["source"] == str(RECORD)


def test_an_unknown_device_is_refused_before_any_folder(tmp_path: Path) -> None:
    from attnprof.commands import project
    from attnprof.errors import UsageError

    with pytest.raises(UsageError, match="no-such-gpu"):
        project.run(project.ProjectRequest(target=str(RECORD), to=("no-such-gpu",),
                                           json=str(tmp_path / "out" / "p.json")))
    assert list(tmp_path.iterdir()) == []
