"""The store under real concurrency, on a real SQLite file: two processes saving 100 runs
each at once, and a writer killed with SIGKILL in the middle of its writes. Afterwards
``PRAGMA integrity_check`` is ok, every run a writer finished is there, and every row
present is whole (its record decompresses and decodes)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from attnprof.store import open_store

#: Saves N runs (real records), printing each run id once its transaction is committed.
#: With PAUSE > 0, the write after PAUSE runs stops inside its open transaction (SQLite's
#: progress handler, called while the INSERT runs), says "inside" and waits to be killed.
WRITER = r"""
import random, sys, time
sys.path.insert(0, {helpers!r})
from store_helpers import fresh_record
from attnprof.store import open_store

count, pause, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
with open_store(path, create=True) as store:
    conn = store._conn

    def inside():
        if pause and done == pause and conn.in_transaction:
            print("inside", flush=True)
            time.sleep(600)
        return 0

    conn.set_progress_handler(inside, 100)
    for done in range(count):
        record = fresh_record()
        for row in record.results if pause else []:  # incompressible: many pages to write
            if row.latency_ms is not None:
                row.latency_ms.samples = [random.random() for _ in range(20_000)]
        store.save(record, label=f"w{{done}}", cwd="/")
        print(record.run_id, flush=True)
"""


def _writer(path: Path, count: int, pause: int = 0) -> subprocess.Popen[str]:
    script = WRITER.format(helpers=str(Path(__file__).resolve().parent))
    return subprocess.Popen([sys.executable, "-c", script, str(count), str(pause), str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _check_whole(path: Path, finished: set[str]) -> int:
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with open_store(path, create=False) as store:
        runs = store.runs()
        ids = {r.run_id for r in runs}
        assert finished <= ids  # every finished run is present
        for run in runs:  # and every row present is whole
            assert store.load(run.run_id).run_id == run.run_id
    return len(ids)


def test_two_writers_at_once(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    writers = [_writer(store_path, 100), _writer(store_path, 100)]
    finished: set[str] = set()
    for w in writers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
        finished |= set(out.split())
    assert len(finished) == 200
    assert _check_whole(store_path, finished) == 200


def test_a_writer_killed_mid_write_leaves_no_partial_row(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    writer = _writer(store_path, 100, pause=5)
    finished: list[str] = []
    assert writer.stdout is not None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # five runs committed, the sixth half-written
        line = writer.stdout.readline().strip()
        if not line or line == "inside":
            break
        finished.append(line)
    assert line == "inside", writer.stderr.read() if writer.stderr else ""
    os.kill(writer.pid, signal.SIGKILL)
    writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    assert len(finished) == 5
    # The sixth run's pages may be in the WAL, but uncommitted: not a row.
    assert _check_whole(store_path, set(finished)) == 5
    present = 5
    # A writer after the kill finds the store as good as before.
    again = _writer(store_path, 2)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert _check_whole(store_path, set(finished) | set(out.split())) == present + 2
