"""Atomic file output: a reader sees the old file or the new one, never half of either.

Every output attnprof writes goes through :func:`write_atomic` (temp file in the same
directory, fsync, ``os.replace``), so an interrupted run leaves either the last complete
version or nothing; the temporary file is removed on every exit path Python controls
(an exception, Ctrl-C, SIGTERM — see :mod:`attnprof.signals`), only SIGKILL or a power cut
can leave one behind. :func:`check_writable` runs before any work starts, so a bad output
path fails fast instead of after minutes of measurement.

Only regular files are ever replaced. ``os.replace`` onto a device node, a FIFO or a socket
would swap the kernel's object for a plain file (as root, ``--json /dev/null`` replaced
``/dev/null``), and files under ``/proc`` and ``/sys`` are the kernel's interface, not
data: :func:`refuse_foreign` rejects all of them, before the run and again at the write.

A symbolic link is never replaced either: ``os.replace`` onto a link swaps the link for a
file (as root, ``--json /dev/stdout`` replaced the machine's ``/dev/stdout``).
:func:`resolve_output` follows the link, one step at a time, to the file it names, and the
output is written atomically beside that file; a link that leads through ``/proc`` or
``/sys`` (``/dev/stdout`` is ``/proc/self/fd/1``) is refused, whatever the descriptor it
names happens to be, since the step through the kernel's tree is what makes it a stream.
The rules that relate several paths (an output that is an input, two outputs on one file)
are in :mod:`attnprof.outputs`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from attnprof.errors import UsageError

__all__ = ["atomic_path", "check_trace_dir", "check_writable", "describe_mode", "make_folder",
           "refuse_foreign", "resolve_output", "status", "write_atomic"]

#: Pseudo-filesystems whose files are the kernel's interface: never an output.
KERNEL_TREES = ("/proc", "/sys")
_MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


def resolve_output(path: str | os.PathLike[str], flag: str = "output") -> Path:
    """The file an output ``path`` names: each symbolic link on the way (in its folders
    too) followed, one step at a time, so that a step into ``/proc`` or ``/sys`` is seen
    (``realpath`` of ``/dev/stdout`` gives the file stdout is redirected to, hiding it).

    :class:`UsageError` for a step into the kernel's trees, or a loop of links."""
    # Joined, not normalised: "link/../x" is x beside the link's target, as the kernel
    # reads it; realpath resolves each folder before the ".." that follows it.
    current = os.path.join(os.getcwd(), os.fspath(path))
    for _ in range(_MAX_LINKS):
        folder, name = os.path.split(current)
        current = os.path.join(os.path.realpath(folder), name)
        _refuse_kernel_tree(current, os.fspath(path), flag)
        if not os.path.islink(current):
            return Path(current)
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    raise UsageError(f"{flag} {os.fspath(path)!r} is a loop of symbolic links (or a chain of "
                     f"more than {_MAX_LINKS}); point the link at a file")


def refuse_foreign(path: str | os.PathLike[str], flag: str = "output") -> Path:
    """Raise :class:`UsageError` unless ``path`` is absent or a regular file (symlinks
    followed) outside ``/proc`` and ``/sys``: the only things attnprof may replace.
    Returns the file to write: ``path`` with its links resolved (:func:`resolve_output`)."""
    text = os.fspath(path)
    if not text.strip():
        raise UsageError(f"{flag} is an empty path; give a file name")
    p = resolve_output(text, flag)
    found = status(p, flag)
    if found is None or stat.S_ISREG(found.st_mode):  # absent: a new file will be made
        return p
    mode = found.st_mode
    what = describe_mode(mode)
    if stat.S_ISDIR(mode):
        raise UsageError(f"{flag} {text!r} is a directory; give a file name")
    raise UsageError(f"{flag} {text!r} is {what}, not a regular file; attnprof only "
                     "replaces regular files: give a file path")


def status(path: Path, flag: str) -> os.stat_result | None:
    """``os.stat`` of ``path`` (symlinks followed); ``None`` when nothing is there (or a
    dangling link). Any other failure — a name too long, a loop of links, a folder that may
    not be searched — is a :class:`UsageError` naming ``flag``."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise UsageError(f"{flag} {str(path)!r}: {exc.strerror or exc}; choose another "
                         "path") from None


def _refuse_kernel_tree(real: str, given: str, flag: str) -> None:
    """``real``: ``given`` (or a step on its way) with its folders resolved."""
    for tree in KERNEL_TREES:
        if real == tree or real.startswith(tree + os.sep):
            how = "is under" if os.path.abspath(given) == real else f"leads to {real!r}, under"
            raise UsageError(f"{flag} {given!r} {how} {tree}, the kernel's interface, "
                             "not a place for files; write somewhere else")


def describe_mode(mode: int) -> str:
    """``"a FIFO"``, ``"a character device"``, ... for a ``st_mode``."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"


def check_writable(path: str | os.PathLike[str], flag: str = "--json") -> Path:
    """Raise :class:`UsageError` unless ``path`` can be created or replaced."""
    given = Path(path)
    p = refuse_foreign(path, flag)
    # The folder the file will be made in (the target's, for a link), named as given.
    parent = p.parent if os.path.islink(given) else given.parent
    found = status(parent, flag)
    if found is None or not stat.S_ISDIR(found.st_mode):
        raise UsageError(f"{flag} {str(given)!r}: directory {str(parent)!r} does not exist; "
                         "create it first")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{flag} {str(given)!r}: directory {str(parent)!r} is not writable")
    return given


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` atomically.

    For writers that insist on a file name of their own (e.g. torch.profiler's exporter).
    On any exception the temporary file is removed and ``path`` is left untouched.
    ``path`` must be absent or a regular file (:func:`refuse_foreign`), checked both
    before and after the temporary file is written.
    """
    p = refuse_foreign(path)  # a link's target: the link itself stays as it is
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=suffix, dir=p.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are normal files
        if refuse_foreign(path) != p:  # it may have become something else while we wrote
            raise UsageError(f"output {os.fspath(path)!r} was made a link to another file "
                             "while attnprof wrote it; write it again")
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
    """A folder for traces: refused if it is anything but a folder, under /proc or /sys,
    or not writable; not created here (see :func:`make_folder`)."""
    text = os.fspath(path)
    if not text.strip():
        raise UsageError(f"{flag} is an empty path; give a folder for the traces")
    p = Path(text)
    found = status(p, flag)
    if found is not None and not stat.S_ISDIR(found.st_mode):
        raise UsageError(f"{flag} {str(p)!r} is {describe_mode(found.st_mode)}; give a "
                         "folder for the traces")
    resolve_output(p, flag)  # not a folder in, or reached through, /proc or /sys
    if found is None:
        check_writable(p, flag)  # its parent must exist and be writable
        return p
    if not os.access(p, os.W_OK):
        raise UsageError(f"{flag} {str(p)!r} is not writable; choose another folder")
    return p


def make_folder(path: str | os.PathLike[str], flag: str = "--trace") -> Path:
    """Create the folder ``path`` (its parent must exist) and prove a file can be made in
    it, so a folder that cannot hold the outputs fails now, before any measurement,
    rather than at the first write. (``os.access`` says yes to root everywhere.)"""
    p = Path(path)
    try:
        p.mkdir(exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {str(p)!r}: cannot create files there "
                         f"({exc.strerror or exc}); choose another folder") from None
    return p
