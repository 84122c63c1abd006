"""Atomic file output: a reader sees the old file or the new one, never half of either.

Every output attnprof writes goes through :func:`write_atomic` (temp file in the same
directory, fsync, ``os.replace``), so an interrupted run leaves either the last complete
version or nothing. :func:`check_writable` runs before any work starts, so a bad output
path fails fast instead of after minutes of measurement.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from attnprof.errors import UsageError


def check_writable(path: str | os.PathLike[str], flag: str = "--json") -> Path:
    """Raise :class:`UsageError` unless ``path`` can be created or replaced."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise UsageError(f"{flag} {str(p)!r} is a directory; give a file name")
    if not parent.is_dir():
        raise UsageError(f"{flag} {str(p)!r}: directory {str(parent)!r} does not exist; "
                         "create it first")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {str(p)!r}: directory {str(parent)!r} is not writable")
    return p


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (same-directory temp file + ``os.replace``)."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

