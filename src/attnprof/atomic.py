"""Atomic file output: a reader sees the old file or the new one, never half of either.

Every output attnprof writes goes through :func:`write_atomic` (temp file in the same
directory, fsync, ``os.replace``), so an interrupted run leaves either the last complete
version or nothing. :func:`check_writable` runs before any work starts, so a bad output
path fails fast instead of after minutes of measurement.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
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


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically.

    For writers that insist on a file name of their own (e.g. torch.profiler's exporter).
    On any exception the temporary file is removed and ``path`` is left untouched.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=suffix, dir=p.parent or ".")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are normal files
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (same-directory temp file + ``os.replace``).

    A write that fails (a full disk, a quota, a read-only file system) raises
    :class:`UsageError` saying so; ``path`` keeps its previous content, if it had any.
    """
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        kept = ("the previous file is unchanged" if os.path.exists(path)
                else "nothing was written")
        raise UsageError(f"cannot write {str(path)!r} ({e.strerror or e}): {_write_fix(e)}; "
                         f"{kept}") from None


def _write_fix(error: OSError) -> str:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free some space on that disk or write the file elsewhere"
    if error.errno == errno.EFBIG:
        return "the file is larger than this system allows a file to be; write it elsewhere"
    if error.errno == errno.EROFS:
        return "that file system is read-only; write the file elsewhere"
    return "write the file elsewhere"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_trace_dir(path: str | os.PathLike[str], flag: str = "--trace") -> Path:
    """A folder for traces: created if missing, refused if it is a file or not writable."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{flag} {str(p)!r} is a file; give a folder for the traces")
    if not p.exists():
        check_writable(p, flag)  # its parent must exist and be writable
        return p
    if not os.access(p, os.W_OK):
        raise UsageError(f"{flag} {str(p)!r} is not writable; choose another folder")
    return p
