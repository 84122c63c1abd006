"""The quick loop (``pytest -m quick``, docs/development.md) stays what it says: every file
it names as out of the loop exists, its reasons are registered markers, and what remains
still reaches every test folder (so every package has tests in the edit-test cycle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from quick_loop import OUT_OF_QUICK, OUT_OF_QUICK_MARKERS, QUICK_ANYWAY

TESTS = Path(__file__).resolve().parent


def test_every_file_out_of_the_quick_loop_exists_and_says_why() -> None:
    missing = [rel for rel in OUT_OF_QUICK if not (TESTS / rel).is_file()]
    assert not missing, f"renamed or removed: update OUT_OF_QUICK in tests/conftest.py: {missing}"
    for rel, why in OUT_OF_QUICK.items():
        assert why and set(why) <= set(OUT_OF_QUICK_MARKERS), (rel, why)
    for test in QUICK_ANYWAY:
        rel, name = test.split("::")
        assert f"def {name}(" in (TESTS / rel).read_text(), f"no {name} in {rel}"


def test_the_quick_loop_reaches_every_test_folder() -> None:
    listed = subprocess.run([sys.executable, "-m", "pytest", "-m", "quick", "--collect-only",
                             "-q", "-p", "no:cacheprovider", str(TESTS)],
                            capture_output=True, text=True, cwd=TESTS.parent, timeout=300)
    assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    reached = {Path(i.split("::")[0]).parts[1] for i in ids if i.startswith("tests/")
               and len(Path(i.split("::")[0]).parts) > 2}
    folders = {p.name for p in TESTS.iterdir()
               if p.is_dir() and any(p.glob("test_*.py")) and p.name != "gpu"}
    assert folders <= reached, f"no quick test in: {sorted(folders - reached)}"
    everything = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                                 "-p", "no:cacheprovider", str(TESTS)],
                                capture_output=True, text=True, cwd=TESTS.parent, timeout=300)
    total = sum(1 for line in everything.stdout.splitlines() if "::" in line)
    assert 0 < len(ids) < total
