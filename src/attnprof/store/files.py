"""What a store's path may be, checked before SQLite opens it: a regular file that is empty
or SQLite (not a folder, FIFO, device or any other file), that this user may write, in a
folder SQLite may keep its journal in, when it is to be saved into; and whether a reader
may use its -wal and -shm files (:func:`may_journal`), so that only reading never leaves
them behind.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attnprof.errors import UsageError
from attnprof.formatting import safe_text

__all__ = ["check_file", "check_writable", "may_journal", "stat_store"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


def stat_store(p: Path, shown: str) -> os.stat_result | None:
    """What is at the store's path (``None``: nothing yet); :class:`UsageError` when it
    cannot be reached."""
    try:
        return os.stat(p)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UsageError(f"cannot reach store {shown} ({exc.strerror}); pass --store with "
                         "another path") from None


def check_writable(p: Path, writable: bool, shown: str) -> None:
    """Refuse a store this user may not write, or whose folder SQLite may not make its
    journal in, before a connection leaves a -wal or -shm file beside it."""
    fix = "pass --store with a writable path, or --no-store"
    if not writable:
        raise UsageError(f"store {shown} is read-only (this user may not write it); {fix}")
    if not os.access(p.parent, os.W_OK | os.X_OK):
        raise UsageError(f"the folder of store {shown} is read-only (SQLite keeps its journal "
                         f"beside the store); {fix}")


def may_journal(p: Path, writable: bool) -> bool:
    """Whether a connection may use ``p``'s -wal and -shm files: they are there already,
    or this user may write the store and make them in its folder."""
    if os.path.exists(f"{p}-wal"):
        return True
    return writable and os.access(p.parent, os.W_OK | os.X_OK)


def check_file(p: Path, found: os.stat_result, shown: str) -> None:
    """Refuse what is at the store's path unless it is a regular file that is empty or
    opens as SQLite: a folder, a FIFO, a device, any other file."""
    if stat.S_ISDIR(found.st_mode):
        raise UsageError(f"store {shown} is a folder; give a file path, e.g. "
                         f"--store {safe_text(str(p / 'runs.db'))}")
    if not stat.S_ISREG(found.st_mode):
        raise UsageError(f"store {shown} is not a regular file (a FIFO, device or socket); "
                         "give the path of a file")
    if found.st_size == 0:
        return  # SQLite takes an empty file as an empty database
    try:
        with open(p, "rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise UsageError(f"cannot read store {shown} ({exc.strerror}); check its "
                         "permissions or pass another --store") from None
    if head != _SQLITE_MAGIC:
        raise UsageError(f"store {shown} is not an SQLite database; pass another --store "
                         "path (attnprof makes the file), or move this file aside")
