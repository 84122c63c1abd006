"""The README's example outputs come from the current code.

``scripts/readme_examples.py`` writes them (it runs each example command); here the cheap
examples are run again, in README order in one scratch folder (``analyze`` reads what
``profile`` wrote), and each table the README shows must have the same header cells and row
names as the fresh output's — never the same timings. The comparison's table, whose real
run compiles flex_attention (tens of seconds), is held to the registry (its rows are every
built-in variant, in order) and to the headers of a cheap real comparison at its width.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from markdown_docs import REPO

from attnprof.cli.main import main


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_examples", REPO / "scripts" / "readme_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SCRIPT = _load_script()
EXAMPLES = SCRIPT.read_examples((REPO / "README.md").read_text(encoding="utf-8"))
CHEAP = [e for e in EXAMPLES if e.cheap]


@contextlib.contextmanager
def _terminal(width: int, cwd: Path) -> Iterator[None]:
    """The conditions the script runs an example in: its folder and terminal width."""
    old_cwd, old_columns = Path.cwd(), os.environ.get("COLUMNS")
    os.chdir(cwd)
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        if old_columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old_columns


def _run(args: list[str], width: int, cwd: Path) -> tuple[int, list[str]]:
    """``attnprof ARGS`` in-process, as the script runs it: its stdout's lines."""
    out, err = io.StringIO(), io.StringIO()
    with _terminal(width, cwd), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        status = main(args)
    return status, SCRIPT.tidy(out.getvalue()) or err.getvalue().splitlines()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, list[str]]]:
    """Each cheap example run now: its exit status and output lines."""
    folder = tmp_path_factory.mktemp("readme")
    SCRIPT.link_inputs(folder)
    return {e.name: _run(e.command, e.width, folder) for e in CHEAP if _inputs_here(e)}


def _inputs_here(example: Any) -> bool:
    """Whether what the example reads from outside the repository is here (the public
    traces beside it)."""
    return all(target.exists() for name, target in SCRIPT.LINKS.items()
               if any(arg.startswith(name) for arg in example.command))


def _mask(line: str) -> str:
    return re.sub(r"\d+(?:[.,]\d+)*", "#", " ".join(line.split()))


def test_examples_are_regenerated_output() -> None:
    """Every example shows output (the script has run since it was added), and the
    examples cover every command."""
    assert [e.name for e in EXAMPLES if not e.shown] == []
    commands = {e.command[0] if e.command else "compare" for e in EXAMPLES}
    assert {"compare", "profile", "analyze", "check", "model", "sweep", "limits",
            "recommend", "diff"} <= commands
    assert CHEAP, "no example is marked cheap: nothing would be checked"


@pytest.mark.parametrize("example", CHEAP, ids=[e.name for e in CHEAP])
def test_cheap_example_has_the_shape_the_readme_shows(
        example: Any, fresh: dict[str, tuple[int, list[str]]]) -> None:
    if not _inputs_here(example):
        pytest.skip(f"the public traces are not beside the repository ({SCRIPT.LINKS})")
    status, lines = fresh[example.name]
    assert status in example.statuses, lines
    if example.start_at:
        start = next(i for i, line in enumerate(lines) if example.start_at in line)
        lines = lines[start:]
    shown = example.shown
    shown_tables, fresh_tables = SCRIPT.tables(shown), SCRIPT.tables(lines)
    if not shown_tables:  # no table in what the README shows: its first line's shape
        assert _mask(shown[0]) in {_mask(line) for line in lines}, (shown[0], lines[:20])
        return
    assert len(fresh_tables) >= len(shown_tables)
    for readme, now in zip(shown_tables, fresh_tables, strict=False):
        assert readme.headers == now.headers
        if readme.closed:
            assert readme.rows == now.rows
        else:  # cut by the README: the rows it shows come first
            assert now.rows[:len(readme.rows)] == readme.rows


def test_first_table_is_the_default_comparison(tmp_path: Path) -> None:
    """The README's first table lists every built-in variant, in the registry's order, under
    the headers a real comparison prints at that width today."""
    from attnprof.variants import REGISTRY

    example = EXAMPLES[0]
    assert example.name == "compare" and example.command == []
    (readme,) = SCRIPT.tables(example.shown)
    assert readme.closed and readme.rows == list(REGISTRY)
    status, lines = _run(["--variants", "naive,sdpa", "--batch", "1", "--heads", "2",
                          "--seq", "16", "--head-dim", "8", "--min-time", "0.01",
                          "--rounds", "1"], example.width, tmp_path)
    assert status == 0, lines
    (now,) = SCRIPT.tables(lines)
    assert readme.headers == now.headers
    assert now.rows == ["naive", "sdpa"]


def test_readme_is_a_landing_page() -> None:
    """At most 200 lines, the comparison's table on its first screen, and the set-up
    commands the project promises — the test one exactly what CI runs."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= SCRIPT.MAX_LINES
    first_table = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    assert first_table < 40
    # The venv activated: every later `$ attnprof ...` example runs as typed (issue 33).
    run_command = ("python3 -m venv .venv && . .venv/bin/activate && pip install -c "
                   "constraints.txt -e '.[hf,report]' && attnprof")
    test_command = ("python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e "
                    "'.[test]' && .venv/bin/python -m pytest")
    assert f"    {run_command}" in lines and f"    {test_command}" in lines
    assert test_command in (REPO / ".ci" / "run").read_text(encoding="utf-8")
