"""The store's schema, versioned: ``PRAGMA user_version`` is the number of migrations run.

Each entry of :data:`MIGRATIONS` takes the database from version *n* to *n + 1* and never
changes once released: a store made by an older attnprof is brought up to date by running
the ones it lacks, in one transaction, and a store made by a newer attnprof (a version this
one does not know) is refused rather than guessed at. ``tests/store/test_migrations.py``
builds a store at every older version and opens it with today's code.
"""

from __future__ import annotations

import sqlite3

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "migrate"]

#: ``PRAGMA application_id`` of an attnprof store ("atnp"): set when a store is made or
#: migrated, so that another program's database is told apart whatever its tables.
#: Stores made before it was set hold 0 and are told by their runs table.
APPLICATION_ID = 0x61746E70

MIGRATIONS: tuple[str, ...] = (
    # 1: the runs. ``variants`` holds the names each between \x1f marks, so a filter is one
    # instr() without a second table; ``record`` is the record's JSON, zlib-compressed.
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        created TEXT NOT NULL,
        status TEXT NOT NULL,
        label TEXT,
        device TEXT,
        device_name TEXT,
        host TEXT,
        torch TEXT,
        variants TEXT NOT NULL DEFAULT '',
        model TEXT,
        summary TEXT NOT NULL DEFAULT '',
        git_commit TEXT,
        git_dirty INTEGER,
        cwd TEXT,
        command TEXT,
        attnprof TEXT NOT NULL,
        saved TEXT NOT NULL,
        record BLOB NOT NULL
    );
    CREATE INDEX runs_created ON runs (created);
    CREATE INDEX runs_label ON runs (label);
    """,
    # 2: this machine's environment and measured ceilings, cached by `attnprof env`.
    """
    CREATE TABLE machine (
        host TEXT NOT NULL,
        device TEXT NOT NULL,
        measured TEXT NOT NULL,
        profile BLOB NOT NULL,
        PRIMARY KEY (host, device)
    );
    CREATE INDEX runs_kind ON runs (kind, created);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, version: int) -> None:
    """Run the migrations after ``version`` in one immediate transaction (the caller holds
    none). A concurrent process may have migrated meanwhile: the version is read again
    under the write lock."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        for step in range(current, SCHEMA_VERSION):
            for statement in MIGRATIONS[step].split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
