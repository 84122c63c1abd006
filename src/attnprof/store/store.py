"""The store itself: open and check a SQLite file, save, list, find, load and remove runs.

Every write is one ``BEGIN IMMEDIATE`` transaction, so a writer killed at any instant
(SIGKILL included) leaves either the whole run or none of it, and SQLite's WAL journal lets
readers go on while another process writes. A file that is not an attnprof store — a
folder, a FIFO, any file that is not SQLite, someone else's SQLite database, a store from a
newer attnprof, a damaged one — is one :class:`UsageError` naming it, found before anything
is written to it. A store opened to save into is also checked, before the command runs, for
what would only fail at the save: a file or folder this user may not write, and a lock
another process holds past the busy timeout.
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from attnprof._version import __version__
from attnprof.atomic import KERNEL_TREES
from attnprof.errors import UsageError
from attnprof.formatting import safe_text
from attnprof.record.base import RecordBase
from attnprof.record.machine import MachineProfile
from attnprof.store.files import check_file, check_writable, may_journal, stat_store
from attnprof.store.prepared import PreparedRun
from attnprof.store.schema import APPLICATION_ID, SCHEMA_VERSION, migrate
from attnprof.store.summary import join_names, split_names, summarize_record

if TYPE_CHECKING:
    # Every record kind: loading a run needs them, saving one (each command's last step,
    # attnprof analyze's start-up included) does not.
    from attnprof.record.family import Record

__all__ = ["PreparedRun", "RunQuery", "Store", "StoredRun", "open_store"]

#: How long a writer waits for another one before giving up (ms); read at each use, so a
#: test may shorten it.
BUSY_TIMEOUT_MS = 60_000
_COLUMNS = ("run_id", "kind", "created", "status", "label", "device", "device_name", "host",
            "torch", "variants", "model", "summary", "git_commit", "git_dirty", "cwd",
            "command", "attnprof", "saved")
#: The runs table's columns since schema 1: what tells a store an older attnprof made
#: (before the application id) from another program's database with a ``runs`` table.
_RUN_COLUMNS = frozenset({*_COLUMNS, "record"})


class StoredRun(msgspec.Struct, kw_only=True):
    """One stored run as ``attnprof runs`` lists it (the record itself is loaded apart)."""

    run_id: str
    kind: str
    created: str
    status: str
    label: str | None
    device: str | None
    device_name: str | None
    host: str | None
    torch: str | None
    variants: list[str]
    model: str | None
    summary: str
    git_commit: str | None
    git_dirty: bool | None
    cwd: str | None
    command: str | None
    attnprof: str
    saved: str


class RunQuery(msgspec.Struct, frozen=True):
    """Filters of ``attnprof runs``; ``None`` leaves a field unfiltered. ``device`` ``cuda``
    matches ``cuda:1`` too; ``since``/``until`` are ISO 8601 times (UTC)."""

    kind: str | None = None
    variant: str | None = None
    model: str | None = None
    device: str | None = None
    label: str | None = None
    since: str | None = None
    until: str | None = None
    limit: int | None = None


def open_store(path: str | os.PathLike[str], *, create: bool) -> Store:
    """The store at ``path``, checked. ``create``: make it (and its folder) when absent and
    bring an older schema up to date; otherwise an absent store is an empty one and nothing
    is created. Raises :class:`UsageError` for anything that is not an attnprof store."""
    p = Path(path)
    shown = safe_text(str(p))
    real = Path(os.path.realpath(p))
    if any(str(real).startswith(tree + "/") for tree in KERNEL_TREES):
        raise UsageError(f"store {shown} is under the kernel's {real.parts[1]} interface, "
                         "not a place for data; give another --store path")
    found = stat_store(p, shown)
    if found is None and not create:
        return Store(p, None)
    if found is not None:
        check_file(p, found, shown)
    elif create:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the folder of store {shown} ({exc.strerror}); "
                             "pass --store with a writable path, or --no-store") from None
    writable = found is None or os.access(p, os.W_OK)
    if create:  # to save into: refused now if it could only fail at the save, after the run
        check_writable(p, writable, shown)
    mode = "rwc" if create and found is None else ("rw" if writable else "ro")
    if not create and not may_journal(p, writable):
        # Only reading, and SQLite could not make (or would leave behind) the -wal and -shm
        # files a WAL store is read through: read the file as it is. No one may be writing
        # it: a writer needs the -wal file, and there is none.
        mode += "&immutable=1"
    try:
        conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode={mode}", uri=True,
                               isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise UsageError(f"cannot open store {shown} ({exc}); pass --store with a "
                         "readable file, or --no-store") from None
    store = Store(p, conn)
    try:
        store._check(create=create and writable)
        if create:
            store._check_lock()
    except BaseException:
        conn.close()
        raise
    return store


def _enter_wal(conn: sqlite3.Connection) -> None:
    """Switch a new store to WAL, waiting for another process that opens it at the same
    moment: the switch needs the file to itself, and SQLite answers "locked" at once
    rather than through the busy timeout when another connection is reading the schema
    (two writers on a fresh store: tests/store/test_concurrency.py)."""
    import time

    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Store:
    """An opened store (``conn`` ``None``: a store that does not exist yet, empty)."""

    def __init__(self, path: Path, conn: sqlite3.Connection | None) -> None:
        self.path, self._conn = path, conn
        self.shown = safe_text(str(path))

    # ----- opening ---------------------------------------------------------------------
    def _check(self, *, create: bool) -> None:
        """Refuse what is not an attnprof store, before writing anything; then, when
        ``create``, bring the schema up to date."""
        conn = self._require()
        with self._errors():
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # In WAL mode a commit that is not fsynced still survives the process being
            # killed at any point (the WAL is ordered and checksummed); only a power cut
            # can lose the last runs saved, never leave a damaged store.
            conn.execute("PRAGMA synchronous = NORMAL")
            # One read transaction, so the four answers are one snapshot: read one by one,
            # another process creating the store between them showed version 0 beside its
            # new tables, and the store was refused as not attnprof's (CI, two writers).
            conn.execute("BEGIN")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                application = conn.execute("PRAGMA application_id").fetchone()[0]
                tables = {r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                columns = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
            finally:
                conn.execute("COMMIT")
        if application not in (0, APPLICATION_ID):
            raise UsageError(f"store {self.shown} is an SQLite database of another "
                             f"application (application_id {application:#x}); pass another "
                             "--store path")
        if version > SCHEMA_VERSION:
            raise UsageError(f"store {self.shown} has schema version {version}, made by a "
                             f"newer attnprof (this one reads up to {SCHEMA_VERSION}); "
                             "upgrade attnprof or pass another --store")
        # Stores made before the application id was set are told by their runs table.
        if (version == 0 and tables) or (version > 0 and not columns >= _RUN_COLUMNS):
            raise UsageError(f"store {self.shown} is an SQLite database but not an attnprof "
                             "store; pass another --store path")
        if create and version < SCHEMA_VERSION:
            with self._errors():
                if version == 0:  # new: WAL lets readers go on while a writer commits
                    _enter_wal(conn)
                migrate(conn, version)

    def _check_lock(self) -> None:
        """Take the write lock and let it go: a store another process holds locked past
        the busy timeout is refused now, before the run, not at the save after it."""
        with self._write():
            pass

    def _require(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's failures as one line naming the store."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise UsageError(f"store {self.shown} stayed locked by another process for "
                                 f"{BUSY_TIMEOUT_MS / 1000:g} s; try again") from None
            raise UsageError(f"store {self.shown} cannot be used ({exc}); pass another "
                             "--store, or --no-store") from None
        except sqlite3.DatabaseError as exc:
            raise UsageError(f"store {self.shown} is damaged ({exc}); move it aside (sqlite3 "
                             "'.recover' may save its runs) or pass another --store") from None

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One immediate write transaction: all of it is committed, or none of it."""
        conn = self._require()
        with self._errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (disk full)
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection (the last one out checkpoints the WAL into the file)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- runs ------------------------------------------------------------------------
    def save(self, record: RecordBase, *, label: str | None = None,
             command: str | None = None, cwd: str | None = None,
             prepared: PreparedRun | None = None) -> StoredRun:
        """Store ``record`` (replacing the run of the same id, as a resumed sweep is), with
        its label, the command line and the git commit of ``cwd``; one transaction.
        ``prepared``: the record's compressed JSON and that git state, worked out ahead
        (:class:`PreparedRun`); used when it is of this record and folder."""
        cwd = cwd if cwd is not None else os.getcwd()
        if prepared is None or prepared.record is not record or prepared.cwd != cwd:
            prepared = PreparedRun(record, cwd, background=False)
        blob, (commit, dirty) = prepared.result()
        s = summarize_record(record)
        row: dict[str, Any] = {
            "run_id": record.run_id, "kind": record.kind, "created": record.created,
            "status": record.status, "label": label, "device": s.device,
            "device_name": s.device_name, "host": s.host, "torch": s.torch,
            "variants": join_names(s.names), "model": s.model, "summary": s.summary,
            "git_commit": commit, "git_dirty": None if dirty is None else int(dirty),
            "cwd": cwd, "command": command, "attnprof": __version__, "saved": _now(),
            "record": blob,
        }
        names = ", ".join(row)
        marks = ", ".join(f":{k}" for k in row)
        updates = ", ".join(f"{k} = excluded.{k}" for k in row if k not in ("run_id", "label"))
        with self._write() as conn:
            conn.execute(f"INSERT INTO runs ({names}) VALUES ({marks}) ON CONFLICT (run_id) "
                         f"DO UPDATE SET {updates}, label = coalesce(excluded.label, "
                         "runs.label)", row)
        return self.find(record.run_id)

    def runs(self, query: RunQuery | None = None) -> list[StoredRun]:
        """Stored runs matching ``query``, newest first."""
        if self._conn is None:
            return []
        q = query or RunQuery()
        where, args = [], []
        for column, value in (("kind", q.kind), ("model", q.model), ("label", q.label)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if q.variant is not None:
            where.append("instr(variants, ?) > 0")
            args.append(join_names([q.variant]))
        if q.device is not None:
            where.append("(device = ? OR device LIKE ? ESCAPE '\\')")
            args += [q.device, _escape_like(q.device) + ":%"]
        if q.since is not None:
            where.append("created >= ?")
            args.append(q.since)
        if q.until is not None:
            where.append("created < ?")
            args.append(q.until)
        sql = (f"SELECT {', '.join(_COLUMNS)} FROM runs"
               f"{' WHERE ' + ' AND '.join(where) if where else ''}"
               " ORDER BY created DESC, saved DESC, run_id DESC")
        if q.limit is not None:
            sql += f" LIMIT {int(q.limit)}"
        with self._errors():
            rows = self._conn.execute(sql, args).fetchall()
        return [_stored(r) for r in rows]

    def find(self, ref: str) -> StoredRun:
        """The run ``ref`` names: its run id, else a label (the newest run with it), else a
        unique prefix of a run id. :class:`UsageError` for no match or several."""
        return self._lookup(ref, unique_label=False)

    def _lookup(self, ref: str, *, unique_label: bool) -> StoredRun:
        shown = safe_text(ref)
        if not ref.strip():
            raise UsageError("an empty run name; give a run id, a prefix of one or a label "
                             "(see attnprof runs)")
        if self._conn is None:
            raise UsageError(f"no stored run {shown!r}: store {self.shown} holds no runs yet")
        select = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        order = " ORDER BY created DESC, saved DESC, run_id DESC"
        with self._errors():
            exact = self._conn.execute(f"{select} WHERE run_id = ?", (ref,)).fetchall()
        if exact:  # a run id wins over labels and prefixes, so those are not looked up:
            return _stored(exact[0])  # the prefix's LIKE reads every row (2 ms at 3,000 runs)
        with self._errors():
            labelled = self._conn.execute(f"{select} WHERE label = ?{order}", (ref,)).fetchall()
            prefixed = self._conn.execute(
                f"{select} WHERE run_id LIKE ? ESCAPE '\\'{order} LIMIT 6",
                (_escape_like(ref) + "%",)).fetchall()
        if labelled:
            if unique_label and len(labelled) > 1:
                ids = ", ".join(r[0] for r in labelled[:5])
                raise UsageError(f"label {shown!r} names {len(labelled)} runs ({ids}); name "
                                 "the one meant by its run id")
            return _stored(labelled[0])
        if len(prefixed) == 1:
            return _stored(prefixed[0])
        if prefixed:
            ids = ", ".join(r[0] for r in prefixed[:5])
            more = " …" if len(prefixed) > 5 else ""
            raise UsageError(f"{shown!r} is the start of several run ids ({ids}{more}); give "
                             "more of the id")
        raise UsageError(f"no stored run {shown!r} in store {self.shown} (no run id, prefix "
                         "or label matches); see attnprof runs")

    def load(self, ref: str) -> Record:
        """The record of the run ``ref`` names (see :meth:`find`)."""
        run = self.find(ref)
        with self._errors():
            (blob,) = self._require().execute("SELECT record FROM runs WHERE run_id = ?",
                                              (run.run_id,)).fetchone()
        try:
            data = zlib.decompress(blob)
        except (zlib.error, TypeError):
            raise UsageError(f"stored run {run.run_id} in store {self.shown} is damaged (its "
                             "record does not decompress); remove it with attnprof runs "
                             "--rm") from None
        from attnprof.record.family import decode_record

        return decode_record(data, source=f"stored run {run.run_id}")

    def remove(self, ref: str) -> StoredRun:
        """Delete the run ``ref`` names; a label must name one run only."""
        run = self._lookup(ref, unique_label=True)
        with self._write() as conn:
            conn.execute("DELETE FROM runs WHERE run_id = ?", (run.run_id,))
        return run

    def _has_table(self, name: str) -> bool:
        with self._errors():
            return self._require().execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                            "AND name = ?", (name,)).fetchone() is not None

    # ----- this machine ----------------------------------------------------------------
    def machine(self, host: str, device: str) -> MachineProfile | None:
        """The cached profile of ``device`` on ``host``, if ``attnprof env`` measured one."""
        if self._conn is None or not self._has_table("machine"):  # schema 1, read-only
            return None
        with self._errors():
            found = self._conn.execute("SELECT profile FROM machine WHERE host = ? AND "
                                       "device = ?", (host, device)).fetchone()
        if found is None:
            return None
        try:
            return msgspec.json.decode(zlib.decompress(found[0]), type=MachineProfile)
        except (zlib.error, msgspec.DecodeError):
            return None  # a damaged cache is measured again, not an error

    def machines(self, host: str, device: str | None = None) -> list[MachineProfile]:
        """Every cached profile of ``host`` (of ``device`` only, when given), newest first."""
        if self._conn is None:
            return []
        found = [self.machine(host, d) for d in self._machine_devices(host, device)]
        return [p for p in found if p is not None]

    def _machine_devices(self, host: str, device: str | None) -> list[str]:
        assert self._conn is not None
        if not self._has_table("machine"):
            return []
        with self._errors():
            rows = self._conn.execute("SELECT device FROM machine WHERE host = ? ORDER BY "
                                      "measured DESC", (host,)).fetchall()
        return [r[0] for r in rows if device is None or r[0] == device]

    def save_machine(self, host: str, device: str, profile: MachineProfile) -> None:
        """Cache ``profile`` for ``device`` on ``host`` (replacing the previous one)."""
        blob = zlib.compress(msgspec.json.encode(profile), 6)
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO machine (host, device, measured, profile) "
                         "VALUES (?, ?, ?, ?)", (host, device, profile.measured, blob))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _stored(row: tuple[Any, ...]) -> StoredRun:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["variants"] = split_names(values["variants"] or "")
    dirty = values["git_dirty"]
    values["git_dirty"] = None if dirty is None else bool(dirty)
    return StoredRun(**values)
