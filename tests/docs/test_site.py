"""The manual builds: ``mkdocs build --strict`` over ``docs/`` (every page in the
navigation, every link and anchor between pages, every ``::: attnprof...`` reference to
real code; a warning fails it). Skipped, saying why, only where MkDocs is not installed —
the ``test`` extra installs it, so CI always builds the site."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_docs import REPO

_MISSING = [name for name in ("mkdocs", "material", "mkdocstrings_handlers.python")
            if importlib.util.find_spec(name.split(".")[0]) is None]


@pytest.mark.skipif(bool(_MISSING), reason=f"MkDocs not installed ({', '.join(_MISSING)}); "
                    "pip install -c constraints.txt -e '.[docs]'")
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner, not a warning
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "index.html").is_file()
    # The API reference was written from the docstrings, not left empty.
    api = (tmp_path / "api" / "index.html").read_text(encoding="utf-8")
    assert "Measure <code>variants</code>" in api
    # The measured figures page is benchmarks/README.md itself.
    figures = (tmp_path / "benchmarks" / "index.html").read_text(encoding="utf-8")
    assert "bench_load_vs_hta.py" in figures
