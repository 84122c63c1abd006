"""The store's library API on a real SQLite file: save, list with filters, find by id,
prefix or label, load, remove, and the schema's migrations."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import msgspec
import pytest
from store_helpers import fresh_record

from attnprof.errors import UsageError
from attnprof.store import PreparedRun, RunQuery, open_store, store_path
from attnprof.store.schema import MIGRATIONS, SCHEMA_VERSION
from attnprof.store.when import parse_when


def test_save_list_find_load_remove(store_path: Path, tmp_path: Path) -> None:
    first, second = fresh_record(), fresh_record(created="2030-01-01T00:00:00+00:00")
    with open_store(store_path, create=True) as store:
        saved = store.save(first, label="baseline", command="attnprof compare", cwd=str(tmp_path))
        store.save(second, cwd=str(tmp_path))
        assert saved.kind == "compare" and saved.label == "baseline"
        assert saved.variants == ["naive", "sdpa", "sdpa-efficient"]
        assert saved.git_commit is None  # tmp_path is no git work tree
        assert [r.run_id for r in store.runs()] == [second.run_id, first.run_id]  # newest first
        assert store.find("baseline").run_id == first.run_id
        assert store.find(first.run_id[:-2]).run_id == first.run_id
        assert store.load("baseline") == first  # the whole record, losslessly
        assert [r.run_id for r in store.runs(RunQuery(variant="sdpa"))] == [second.run_id,
                                                                            first.run_id]
        assert store.runs(RunQuery(variant="sdp")) == []  # names match whole
        assert store.runs(RunQuery(kind="sweep")) == []
        assert [r.run_id for r in store.runs(RunQuery(device="cpu", label="baseline"))] == [
            first.run_id]
        assert [r.run_id for r in store.runs(RunQuery(since="2029-12-31T00:00:00+00:00"))] == [
            second.run_id]
        assert len(store.runs(RunQuery(limit=1))) == 1
        assert store.remove("baseline").run_id == first.run_id
        assert [r.run_id for r in store.runs()] == [second.run_id]


def test_saving_a_run_again_replaces_it_and_keeps_its_label(store_path: Path) -> None:
    record = fresh_record()
    with open_store(store_path, create=True) as store:
        store.save(record, label="nightly")
        record.status = "complete"
        store.save(record)  # a resumed sweep saves its run again, without a label
        (run,) = store.runs()
    assert run.label == "nightly" and run.status == "complete"


def test_git_commit_of_the_working_folder(store_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    with open_store(store_path, create=True) as store:
        run = store.save(fresh_record(), cwd=str(repo))
    assert run.git_commit is not None and len(run.git_commit) == 40
    assert run.git_dirty in (True, False)


def test_a_prepared_run_is_saved_as_the_record_itself(store_path: Path, tmp_path: Path
                                                       ) -> None:
    """What a command prepares while it draws its view (the compressed record, the git
    state) is what saving works out itself; prepared for another record or folder, it is
    not used."""
    repo = str(Path(__file__).resolve().parents[2])
    record, other = fresh_record(), fresh_record(created="2030-01-01T00:00:00+00:00")
    with open_store(store_path, create=True) as store:
        plain = store.save(record, cwd=repo)
        ahead = store.save(record, cwd=repo, prepared=PreparedRun(record, repo))
        (blob_ahead,) = store._require().execute("SELECT record FROM runs").fetchone()
        assert msgspec.structs.replace(ahead, saved=plain.saved) == plain
        assert blob_ahead == zlib.compress(msgspec.json.encode(record), 6)
        # Prepared for another record, or in another folder: saving works it out anew.
        store.save(other, cwd=repo, prepared=PreparedRun(record, repo))
        assert store.load(other.run_id) == other
        elsewhere = store.save(record, cwd=str(tmp_path), prepared=PreparedRun(record, repo))
        assert elsewhere.git_commit is None and elsewhere.cwd == str(tmp_path)


def test_a_failure_while_preparing_is_raised_by_the_save(store_path: Path,
                                                         tmp_path: Path) -> None:
    record = fresh_record()
    record.results = [object()]  # type: ignore[list-item]  # no JSON for this
    prepared = PreparedRun(record, str(tmp_path))
    with open_store(store_path, create=True) as store, pytest.raises(TypeError):
        store.save(record, cwd=str(tmp_path), prepared=prepared)
    with open_store(store_path, create=False) as store:
        assert store.runs() == []


def test_a_label_naming_several_runs_finds_the_newest_but_removes_none(store_path: Path
                                                                      ) -> None:
    old = fresh_record(created="2026-01-01T00:00:00+00:00")
    new = fresh_record(created="2026-02-01T00:00:00+00:00")
    with open_store(store_path, create=True) as store:
        store.save(old, label="ci")
        store.save(new, label="ci")
        assert store.find("ci").run_id == new.run_id
        with pytest.raises(UsageError, match="label 'ci' names 2 runs"):
            store.remove("ci")
        assert len(store.runs()) == 2


def test_reading_an_absent_store_creates_nothing(store_path: Path) -> None:
    with open_store(store_path, create=False) as store:
        assert store.runs() == []
        with pytest.raises(UsageError, match="holds no runs yet"):
            store.find("x")
    assert not store_path.exists() and not store_path.parent.exists()


def test_store_path_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ATTNPROF_STORE", str(tmp_path / "env.db"))
    assert store_path("flag.db") == Path("flag.db")
    assert store_path() == tmp_path / "env.db"
    assert store_path("flag.db", no_store=True) is None
    monkeypatch.setenv("ATTNPROF_STORE", "")
    import platformdirs

    assert store_path() == Path(platformdirs.user_data_dir("attnprof", appauthor=False)) / \
        "runs.db"


def test_the_suite_never_uses_the_users_store() -> None:
    import os
    import tempfile

    assert os.environ["ATTNPROF_STORE"].startswith(tempfile.gettempdir())


def _v1_store(path: Path, record_json: bytes) -> None:
    """A store as attnprof wrote it at schema version 1, holding one run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO runs (run_id, kind, created, status, variants, summary, "
                 "attnprof, saved, record) VALUES ('old-run', 'compare', "
                 "'2026-01-01T00:00:00+00:00', 'complete', '', 'x', '0.1.0', "
                 "'2026-01-01T00:00:00+00:00', ?)", (zlib.compress(record_json),))
    conn.commit()
    conn.close()


def test_migration_from_every_older_schema(store_path: Path) -> None:
    assert SCHEMA_VERSION == 2
    record = fresh_record(run_id="old-run")
    _v1_store(store_path, msgspec.json.encode(record))
    with open_store(store_path, create=False) as store:  # reading: no migration, still works
        assert store.load("old-run") == record
        assert store.machines("host") == []
    assert sqlite3.connect(store_path).execute("PRAGMA user_version").fetchone()[0] == 1
    with open_store(store_path, create=True) as store:
        assert store.load("old-run") == record
        store.save(fresh_record())
    conn = sqlite3.connect(store_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"runs", "machine", "runs_kind"} <= tables
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_store_from_a_newer_attnprof_is_refused_untouched(store_path: Path) -> None:
    _v1_store(store_path, msgspec.json.encode(fresh_record()))
    conn = sqlite3.connect(store_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = store_path.read_bytes()
    with pytest.raises(UsageError, match="made by a newer attnprof"):
        open_store(store_path, create=True)
    assert store_path.read_bytes() == before


def test_someone_elses_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    with pytest.raises(UsageError, match="not an attnprof store"):
        open_store(other, create=True)
    assert other.read_bytes() == before


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-30", "2026-11-30T00:00:00+00:00"),
    ("2026-11-30T10:00", "2026-11-30T10:00:00+00:00"),
    ("2026-11-30T10:00:00+02:00", "2026-11-30T08:00:00+00:00"),
    ("2d", "2026-11-28T12:00:00+00:00"),
    ("3h", "2026-11-30T09:00:00+00:00"),
])
def test_when(text: str, expected: str) -> None:
    from datetime import datetime, timezone

    now = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
    assert parse_when("--since", text, now) == expected


@pytest.mark.parametrize("text", ["yesterday", "7 days", "-3d", ""])
def test_when_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(UsageError, match="--since"):
        parse_when("--since", text)
