"""No output destroys another file, whatever the combination (issue 30, acceptance 2).

For random combinations of output flags and paths — fresh files, the inputs, links to
them and to other files, the results store and its write-ahead log, FIFOs, figures' names
in a plots folder holding links and FIFOs, folders that do not exist — in a temporary tree
holding inputs, links and a store with a run in it, a torch-free command (``analyze``,
``diff``, ``report``) either runs or is refused in one line, and afterwards no file
outside the outputs it declared has changed (every file hashed before and after; the
store compared by what it holds) and the store passes SQLite's ``PRAGMA integrity_check``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from plan_tree import PUBLIC_TRACE, integrity, make_tree, snapshot

from attnprof.cli.main import main

pytestmark = pytest.mark.skipif(not PUBLIC_TRACE.is_file(),
                                reason=f"public trace {PUBLIC_TRACE} not found")

#: Paths, relative to the tree, an output flag may be given.
FILES = ("out.json", "out.csv", "page.html", "trace.json.gz", "old.json", "runs.db",
         "runs.db-wal", "runs.db-shm", "victim.txt", "to-trace", "to-victim", "to-store",
         "fifo", "P/trace1-categories.svg", "P/trace1-timeline.png", "P/run.json",
         "P/diff.svg", "NEW/run.json", "missing/out.json", "P", "NEW")
FOLDERS = ("P", "NEW", "Q", "missing/P", "trace.json.gz", "runs.db", "to-trace", "fifo")
#: What may lie in the plots folder P under a figure's name.
IN_P = ("nothing", "a file", "a link to the trace", "a link to the victim", "a FIFO")

COMMANDS = {
    "analyze": (["analyze", "trace.json.gz"], ("--json", "--csv", "--html", "--plots")),
    "diff": (["diff", "old.json", "new.json"], ("--json", "--csv", "--html", "--plots")),
    "report": (["report", "new.json"], ("-o", "--plots")),
}


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, list[str], dict[str, str], str, str]:
    """A command, its flags, the flags' paths, what lies in P, and the store flag."""
    name = draw(st.sampled_from(sorted(COMMANDS)))
    argv, flags = COMMANDS[name]
    given_: dict[str, str] = {}
    for flag in flags:
        if flag == "-o" or draw(st.booleans()):
            pool = FOLDERS if flag == "--plots" else FILES
            given_[flag] = draw(st.sampled_from(pool))
    in_p = draw(st.sampled_from(IN_P))
    store = draw(st.sampled_from(("env", "--store", "--no-store"))) if name == "analyze" \
        else "env"
    line = list(argv)
    for flag, path in given_.items():
        line += [flag, path]
    if store == "--store":
        line += ["--store", "runs.db"]
    elif store == "--no-store":
        line += ["--no-store"]
    return name, line, given_, in_p, store


def _lay_out(root: Path, in_p: str) -> None:
    """The links, the FIFO and the plots folder P of one example."""
    (root / "to-trace").symlink_to("trace.json.gz")
    (root / "to-victim").symlink_to("victim.txt")
    (root / "to-store").symlink_to("runs.db")
    os.mkfifo(root / "fifo")
    (root / "P").mkdir()
    figure = root / "P" / "trace1-timeline.png"
    if in_p == "a file":
        figure.write_bytes(b"an old figure")
    elif in_p == "a link to the trace":
        figure.symlink_to(root / "trace.json.gz")
    elif in_p == "a link to the victim":
        figure.symlink_to(root / "victim.txt")
    elif in_p == "a FIFO":
        os.mkfifo(figure)


def _declared(root: Path, given_: dict[str, str]) -> tuple[set[str], set[str]]:
    """The files the flags name (a link: and the file it leads to), and the folders whose
    whole content is output (--plots)."""
    files, folders = set(), set()
    for flag, path in given_.items():
        real = os.path.relpath(os.path.realpath(root / path), root)
        (folders if flag == "--plots" else files).update({path, real})
    return files, folders


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=command_lines())
def test_no_file_outside_the_outputs_changes(
        case: tuple[str, list[str], dict[str, str], str, str],
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    name, line, given_, in_p, store_flag = case
    with tempfile.TemporaryDirectory(prefix="attnprof-plan-") as tmp:
        tree = make_tree(Path(tmp) / "tree")
        root = tree.root
        _lay_out(root, in_p)
        monkeypatch.chdir(root)
        monkeypatch.setenv("ATTNPROF_STORE", str(tree.store))
        before = snapshot(root, tree.store)
        code = main(line)
        err = capsys.readouterr().err.strip()
        event(f"{name} exit {code}")
        after = snapshot(root, tree.store)
        assert integrity(tree.store) == "ok", line
        if code == 2:  # refused: one line, and nothing changed at all
            (message,) = err.splitlines()
            assert message.startswith("attnprof: error: "), (line, err)
            assert after == before, line
            return
        assert code == 0, (line, err)
        files, folders = _declared(root, given_)
        if name == "analyze" and store_flag != "--no-store":
            files.add("runs.db")  # the run is stored: the store is an output too
        changed = {path for path in before.keys() | after.keys()
                   if before.get(path) != after.get(path)}
        outside = {path for path in changed if path not in files and not any(
            path == folder or path.startswith(folder + os.sep) for folder in folders)}
        assert not outside, (line, sorted(outside))
        for path in files - {"runs.db"}:  # each output written, as a regular file
            assert (root / path).is_file(), (line, path)
