"""The README runs as shown, and its example outputs come from the current code.

``scripts/readme_examples.py`` writes the outputs (it runs each example command). Here every
``$ attnprof ...`` line of the README is run again as typed — a shell with the venv's
``attnprof`` first on the PATH, as the README's set-up leaves it — in README order in one
scratch folder (``analyze`` reads what ``profile`` wrote). Each must exit as the README says
and print the shape it shows: the lines above its first table, and every line of an example
without one, with their numbers masked; each table's header cells and row names — never
the timings. The README's Python snippet runs as written. The examples are sized for this:
about two minutes together on the 2-core CI machine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from markdown_docs import REPO

from attnprof.cli.main import main

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "readme_examples", REPO / "scripts" / "readme_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SCRIPT = _load_script()
README = (REPO / "README.md").read_text(encoding="utf-8")
EXAMPLES = SCRIPT.read_examples(README)


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


def _bin_folder(scratch: Path) -> Path:
    """The folder whose ``attnprof`` the README's activated venv puts first on the PATH:
    this interpreter's (the console script ``pip install -e`` made), else a stand-in that
    runs ``python -m attnprof`` with this interpreter."""
    here = Path(sys.executable).parent
    if (here / "attnprof").is_file():
        return here
    folder = scratch / "bin"
    folder.mkdir()
    (folder / "attnprof").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m attnprof "$@"\n',
                                     encoding="utf-8")
    (folder / "attnprof").chmod(0o755)
    return folder


def _as_typed(line: str, width: int, cwd: Path, path: Path) -> tuple[int, list[str]]:
    """The README's line run by a shell in ``cwd``: its exit status and stdout's lines."""
    env = {**os.environ, "COLUMNS": str(width), "LINES": "50",
           "PATH": f"{path}{os.pathsep}{os.environ.get('PATH', '')}",
           "ATTNPROF_STORE": str(cwd / "runs.db")}  # the scratch folder's, not the user's
    done = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    return done.returncode, SCRIPT.tidy(done.stdout) or done.stderr.splitlines()


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, list[str]]]:
    """Each example run now, in README order: its exit status and output lines."""
    folder = tmp_path_factory.mktemp("readme")
    SCRIPT.link_inputs(folder)
    path = _bin_folder(tmp_path_factory.mktemp("readme-bin"))
    return {e.name: _as_typed(e.line, e.width, folder, path) for e in EXAMPLES}


def _mask(line: str) -> str:
    return re.sub(r"\d+(?:[.,]\d+)*", "#", " ".join(line.split()))


def test_examples_are_regenerated_output() -> None:
    """Every example shows output (the script has run since it was added), and the
    examples cover every command."""
    assert [e.name for e in EXAMPLES if not e.shown] == []
    commands = {e.command[0] if e.command else "compare" for e in EXAMPLES}
    assert {"compare", "profile", "analyze", "check", "model", "sweep", "limits",
            "recommend", "diff"} <= commands


def test_every_attnprof_line_of_the_readme_is_an_example() -> None:
    """No ``$ attnprof`` line escapes the check: each is an example's command."""
    typed = [line[2:] for line in README.splitlines() if line.startswith("$ attnprof")]
    assert typed == [e.line for e in EXAMPLES]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_runs_as_shown(example: Any, fresh: dict[str, tuple[int, list[str]]]) -> None:
    status, lines = fresh[example.name]
    assert status in example.statuses, lines[-20:]
    if example.start_at:
        start = next(i for i, line in enumerate(lines) if example.start_at in line)
        lines = lines[start:]
    shown = [line for line in example.shown if line != "…"]
    printed = {_mask(line) for line in lines}
    first_table = next((i for i, line in enumerate(shown) if line.lstrip().startswith("┏")),
                       len(shown))
    for line in shown[:first_table]:  # the title lines; all of an example without a table
        assert _mask(line) in printed, (line, lines[:20])
    shown_tables, fresh_tables = SCRIPT.tables(shown), SCRIPT.tables(lines)
    assert len(fresh_tables) >= len(shown_tables)
    for readme, now in zip(shown_tables, fresh_tables, strict=False):
        assert readme.headers == now.headers
        if readme.closed:
            assert readme.rows == now.rows
        else:  # cut by the README: the rows it shows come first
            assert now.rows[:len(readme.rows)] == readme.rows


def test_the_python_snippet_runs_as_written(tmp_path: Path) -> None:
    """The README's Python API block, run as a script in an empty folder."""
    (code,) = re.findall(r"^## Python API\n\n```python\n(.*?)^```$", README,
                         re.MULTILINE | re.DOTALL)
    env = {**os.environ, "ATTNPROF_STORE": str(tmp_path / "runs.db")}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summaries = done.stdout.strip().splitlines()  # compare's, the model's, the capture's
    assert len(summaries) == 3, done.stdout
    assert "prefill" in summaries[1] and "your own loop" in summaries[2]
    assert list((tmp_path / "runs").glob("*baseline*/*"))  # the capture's trace and record


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


def test_the_readme_names_every_extra_and_installs_what_its_examples_use() -> None:
    """Each user-facing extra is named with what it enables, exists in pyproject.toml, and
    ``[all]`` is all of them; the set-up installs ``hf`` (the model example) and ``report``
    (``--html``), so every example runs after it."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the tomli the package depends on there
        import tomli as tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    named = ("hf", "report", "ray", "frames", "docs")
    for extra in (*named, "all"):
        assert f"`[{extra}]`" in README and extra in extras, extra
    assert extras["all"] == [f"attnprof[{','.join(named)}]"]
    assert "-e '.[hf,report]'" in README.split("Set up and run the tests")[0]
    assert any(e.command[:1] == ["model"] for e in EXAMPLES)
