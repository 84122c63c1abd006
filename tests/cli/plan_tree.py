"""A temporary tree of what a command reads and keeps — a real trace, records, a user's
variant and model files, an expectations file, a results store — and a snapshot of every
file in it, to tell what a command changed (the outputs-plan tests)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "tests" / "fixtures" / "records"
EXPECT = ROOT / "examples" / "expectations" / "fused-attention.toml"
#: A real CPU trace from the public set, as the repository keeps it (a tiny one: analysed
#: in 0.1 s).
PUBLIC_TRACE = ROOT / "examples" / "traces" / "cpu_only.json.gz"

VARIANT = "def attention(q, k, v, **kw):\n    return q\n"
FACTORY = "def make():\n    raise RuntimeError('never built')\n"


@dataclass(frozen=True)
class Tree:
    """The files of one test, all under ``root``."""

    root: Path
    trace: Path
    expect: Path
    variant: Path  # a user's variant file: mine.py:attention
    factory: Path  # a user's model factory: factory.py:make
    sweep: Path  # a sweep record (recommend --from)
    old: Path  # two comparison records (diff OLD NEW, report)
    new: Path
    store: Path  # a real results store, with one run in it
    victim: Path  # a file no command reads or writes

    @property
    def user_variant(self) -> str:
        return f"{self.variant}:attention"


def make_tree(root: Path) -> Tree:
    """Every file a command of the tests reads, and a store holding one run."""
    from attnprof.record.family import load_record
    from attnprof.store import open_store

    root.mkdir(parents=True, exist_ok=True)
    tree = Tree(root=root, trace=root / "trace.json.gz", expect=root / "expect.toml",
                variant=root / "mine.py", factory=root / "factory.py",
                sweep=root / "sweep.json", old=root / "old.json", new=root / "new.json",
                store=root / "runs.db", victim=root / "victim.txt")
    shutil.copyfile(PUBLIC_TRACE, tree.trace)
    shutil.copyfile(EXPECT, tree.expect)
    tree.variant.write_text(VARIANT)
    tree.factory.write_text(FACTORY)
    shutil.copyfile(RECORDS / "sweep-v2.json", tree.sweep)
    shutil.copyfile(RECORDS / "compare-v1.json", tree.old)
    shutil.copyfile(RECORDS / "compare-v2.json", tree.new)
    tree.victim.write_text("the user's notes\n")
    with open_store(tree.store, create=True) as store:
        store.save(load_record(tree.new), label="kept", command="attnprof compare",
                   cwd=str(root))
    return tree


def snapshot(root: Path, store: Path | None = None) -> dict[str, tuple[str, ...]]:
    """Every entry under ``root``: a link's target, a file's hash, a FIFO, a folder.

    ``store``, a results store, by what it holds (every table's rows): its bytes change
    whenever SQLite moves its write-ahead log into it, which a command that opens the store
    and is then refused may do; its ``-wal`` and ``-shm`` files, SQLite's own, are left out.
    """
    found: dict[str, tuple[str, ...]] = {}
    siblings = {f"{store}-wal", f"{store}-shm"} if store is not None else set()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            mode = os.lstat(path).st_mode
            if str(path) in siblings:
                continue
            if store is not None and path == store and stat.S_ISREG(mode):
                found[rel] = ("store", dump(store))
            elif stat.S_ISLNK(mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(mode):
                found[rel] = ("dir",)
            elif stat.S_ISREG(mode):
                found[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                found[rel] = ("other", oct(stat.S_IFMT(mode)))
    return found


def dump(store: Path) -> str:
    """A hash of everything ``store`` holds, read through SQLite."""
    import sqlite3

    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return hashlib.sha256("\n".join(con.iterdump()).encode()).hexdigest()
    finally:
        con.close()


def integrity(store: Path) -> str:
    """SQLite's own verdict on ``store`` (``"ok"`` when sound)."""
    import sqlite3

    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()
