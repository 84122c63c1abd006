"""Issue 30 (items 6, 9 and 11): a store that cannot take the run is found before the run,
with real SQLite files — read-only (as a user other than root, who may write anything),
another program's database with a ``runs`` table, a lock another process holds past the
busy timeout; a save that fails after the run keeps the record in a file, exit 3; dates
past the calendar's ends; labels with control and bidi characters; a read-only store
folder read; a hand-edited record with negative figures refused."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_helpers import fresh_record

import attnprof.store.store as store_module
from attnprof.cli.main import main
from attnprof.record.family import RECORD_TYPES, load_record
from attnprof.store import open_store

TRACE = "a100_alexnet_inference.json.gz"


def _one_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnprof: error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A folder a user other than root may pass through (pytest's are private)."""
    with tempfile.TemporaryDirectory(prefix="attnprof-test-") as base:
        Path(base).chmod(0o711)
        yield Path(base)


def _as_nobody(argv: list[str], cwd: Path) -> tuple[int, str]:
    """``main(argv)`` in a forked child that may write only what others may: as root it
    becomes nobody first. The caller runs the same command once before, so that what it
    imports is imported while the interpreter's files can still be read."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        code = 99
        try:
            os.close(read)
            sys.stderr = sys.stdout = os.fdopen(write, "w")
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            os.chdir(cwd)
            code = main(argv)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as f:
        said = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), said


def _store_with_a_run(folder: Path) -> tuple[Path, str]:
    folder.mkdir(mode=0o755, exist_ok=True)
    path = folder / "runs.db"
    with open_store(path, create=True) as store:
        run = store.save(fresh_record(), label="kept")
    path.chmod(0o644)
    return path, run.run_id


# ---- item 6: found before the run -----------------------------------------------------
def test_a_read_only_store_is_refused_before_the_run(shared_tmp: Path,
                                                     public_traces: Path) -> None:
    folder = shared_tmp / "s"
    store, _ = _store_with_a_run(folder)
    folder.chmod(0o777)  # the folder may be written: the file may not
    store.chmod(0o444)
    trace = str(public_traces / TRACE)
    assert main(["analyze", trace, "--no-store"]) == 0  # its imports, while root
    before = store.read_bytes()
    code, said = _as_nobody(["analyze", trace, "--store", str(store)], shared_tmp)
    assert code == 2, said
    _one_error(said, "runs.db is read-only", "--no-store")  # and nothing else: no analysis
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]  # no -wal, no -shm
    assert store.read_bytes() == before


def test_a_store_in_a_read_only_folder_is_refused_before_the_run(
        shared_tmp: Path, public_traces: Path) -> None:
    folder = shared_tmp / "s"
    store, _ = _store_with_a_run(folder)
    store.chmod(0o666)  # the file may be written: its folder may not
    folder.chmod(0o555)
    trace = str(public_traces / TRACE)
    assert main(["analyze", trace, "--no-store"]) == 0
    code, said = _as_nobody(["analyze", trace, "--store", str(store)], shared_tmp)
    folder.chmod(0o755)
    assert code == 2, said
    _one_error(said, "folder of store", "is read-only")


@pytest.mark.parametrize("schema", [
    "PRAGMA user_version = 2; CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT);",
    "PRAGMA user_version = 1; CREATE TABLE runs (run_id TEXT, kind TEXT);",
    "PRAGMA application_id = 1234; PRAGMA user_version = 2; CREATE TABLE runs (x);",
])
def test_another_programs_database_with_a_runs_table_is_refused_before_the_run(
        tmp_path: Path, public_traces: Path, schema: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.executescript(schema)
    conn.close()
    before = other.read_bytes()
    assert main(["analyze", str(public_traces / TRACE), "--store", str(other)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # refused before the analysis
    _one_error(err, "app.db", "not an attnprof store" if "1234" not in schema
               else "another application")
    assert other.read_bytes() == before


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Another process holding ``path``'s exclusive lock until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.read()\n",
         str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)


def test_a_store_locked_past_the_timeout_is_refused_before_the_run(
        store_path: Path, public_traces: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    store_path.parent.mkdir()
    open_store(store_path, create=True).close()
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 300)
    with _locked(store_path):
        assert main(["analyze", str(public_traces / TRACE), "--store", str(store_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # nothing analysed
    _one_error(err, "stayed locked by another process for 0.3 s")


def test_a_save_that_fails_after_the_run_keeps_the_record_in_a_file(
        store_path: Path, public_traces: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The lock is taken while the command runs (after the check before it): the run is
    kept in ``attnprof-unsaved-RUN.json`` in the current folder, one line says so, exit 3."""
    from attnprof.cli import analyze_cmd

    store_path.parent.mkdir()
    open_store(store_path, create=True).close()
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 300)
    monkeypatch.chdir(tmp_path)
    real_run = analyze_cmd.run
    lock = contextlib.ExitStack()

    def run_then_lock(args: object) -> object:
        outcome = real_run(args)
        lock.enter_context(_locked(store_path))
        return outcome

    monkeypatch.setattr(analyze_cmd, "run", run_then_lock)
    with lock:
        code = main(["analyze", str(public_traces / TRACE), "--store", str(store_path)])
    assert code == 3
    out, err = capsys.readouterr()
    assert "alexnet" in out and "stored as run" not in out
    line = _one_error(err, "stayed locked", "the run finished but is not stored",
                      "attnprof-unsaved-")
    (kept,) = tmp_path.glob("attnprof-unsaved-*.json")
    assert kept.name in line
    record = load_record(kept)
    assert kept.name == f"attnprof-unsaved-{record.run_id}.json"
    assert record.kind == "analyze"
    with open_store(store_path, create=False) as store:
        assert store.runs() == []
    assert main(["show", str(kept)]) == 0  # the kept record reads as any record file


def test_a_new_store_carries_attnprofs_application_id(store_path: Path) -> None:
    from attnprof.store.schema import APPLICATION_ID

    open_store(store_path, create=True).close()
    conn = sqlite3.connect(store_path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()


# ---- item 9: dates -----------------------------------------------------------------------
@pytest.mark.parametrize("when", ["999999w", "999999d", "0001-01-01T00:00+01:00",
                                  "9999-12-31T23:00-02:00", ""])
@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_dates_past_the_calendar_or_empty_are_one_line(
        when: str, flag: str, store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", flag, when, "--store", str(store_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    _one_error(err, f"{flag} {when!r}")


# ---- item 11 -------------------------------------------------------------------------
def test_every_kind_the_store_holds_can_be_listed(store_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from attnprof.cli.runs_cmd import STORED_KINDS

    tags = {t.__struct_config__.tag for t in RECORD_TYPES}
    assert set(STORED_KINDS) == tags - {"diff"}  # diff makes a record but stores none
    for kind in ("check", "limits", "recommend"):
        assert main(["runs", "--kind", kind, "--store", str(store_path)]) == 0
        assert "no stored runs match" in capsys.readouterr().out


@pytest.mark.parametrize("label", ["\x85next", "a\u202eb", "\u2066x\u2069", "x\u200e",
                                   "\u200fy", "\x7f", "a\u2028b", "\x9b31m"])
def test_labels_with_control_or_bidi_characters_are_refused(
        label: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    assert main(["analyze", "x.json", "--label", label, "--store", str(store)]) == 2
    line = _one_error(capsys.readouterr().err, "--label", "control or bidi characters")
    assert label not in line
    assert not store.exists()


def test_labels_stored_by_older_versions_are_escaped_in_json(
        store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    label = "evil\u202e\x85\u2066name"
    with open_store(store_path, create=True) as store:
        record = fresh_record()
        record.results[0].reason = f"from an older version: {label}"
        run = store.save(record, label=label)
    assert main(["runs", "--json", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert not set(out) & set("\u202e\x85\u2066")
    assert "evil\\u202e\\u0085\\u2066name" in out
    assert json.loads(out)[0]["label"] == label  # the same JSON
    assert main(["show", run.run_id, "--json", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert not set(out) & set("\u202e\x85\u2066")
    assert json.loads(out)["run_id"] == run.run_id


def test_minus_zero_is_zero_percent(capsys: pytest.CaptureFixture[str],
                                    tmp_path: Path) -> None:
    record = tmp_path / "r.json"
    record.write_bytes(fresh_record().to_json())
    assert main(["diff", str(record), str(record), "--fail-on-regression", "-0"]) == 0
    err = capsys.readouterr().err
    assert "percentage" not in err


def test_a_read_only_store_folder_can_be_read(shared_tmp: Path) -> None:
    folder = shared_tmp / "s"
    store, run_id = _store_with_a_run(folder)
    assert main(["runs", "--store", str(store)]) == 0  # their imports, while root
    assert main(["show", run_id, "--store", str(store)]) == 0
    folder.chmod(0o555)
    try:
        code, said = _as_nobody(["runs", "--store", str(store)], shared_tmp)
        assert code == 0, said
        assert run_id in said and "kept" in said
        code, said = _as_nobody(["show", "kept", "--store", str(store)], shared_tmp)
        assert code == 0, said
        assert run_id in said
    finally:
        folder.chmod(0o755)
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]


def test_reading_a_read_only_store_leaves_no_journal_files(shared_tmp: Path) -> None:
    folder = shared_tmp / "s"
    store, run_id = _store_with_a_run(folder)
    folder.chmod(0o777)
    store.chmod(0o444)
    assert main(["runs", "--store", str(store)]) == 0
    code, said = _as_nobody(["runs", "--store", str(store)], shared_tmp)
    assert code == 0 and run_id in said, said
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]


@pytest.mark.parametrize(("path", "value"), [
    (("latency_ms", "median"), -11.0), (("latency_ms", "samples"), [1.0, -2.0]),
    (("peak_memory_bytes",), -4096)])
def test_a_record_with_negative_latency_or_memory_is_refused(
        path: tuple[str, ...], value: object, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(fresh_record().to_json())
    row = data["results"][0]
    for key in path[:-1]:
        row = row[key]
    row[path[-1]] = value
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    good = tmp_path / "good.json"
    good.write_bytes(fresh_record().to_json())
    for argv in (["show", str(edited)], ["diff", str(good), str(edited)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == ""
        _one_error(err, "edited.json", ">= 0", path[0])


def test_the_dirty_mark_is_explained_only_where_a_row_has_it(
        store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open_store(store_path, create=True) as store:
        clean = store.save(fresh_record())
    conn = sqlite3.connect(store_path)
    conn.execute("UPDATE runs SET git_commit = 'abc123', git_dirty = 0")
    conn.commit()
    assert main(["runs", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "abc123" in out and "uncommitted" not in out and "*" not in out
    conn.execute("UPDATE runs SET git_dirty = 1 WHERE run_id = ?", (clean.run_id,))
    conn.commit()
    conn.close()
    assert main(["runs", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "abc123*" in out and "* the working tree had uncommitted changes" in out

