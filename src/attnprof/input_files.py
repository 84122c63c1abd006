"""The files a command reads, checked as its outputs are before a byte is read.

Every input file — a trace, a record, a record to resume, a budgets or expectations file, a
model's ``config.json`` — is opened here, and only when it is what it claims to be:

* a regular file (symlinks followed). A directory, a device (``/dev/zero`` would be read
  forever), a socket, or a file under ``/proc`` or ``/sys`` (the kernel's interface: some
  block, some never end) is refused by name. A FIFO is refused too — opening one blocks
  until something writes to it — except where the reader streams (a trace, read in bounded
  memory whatever its length: ``attnprof analyze <(zcat t.json.gz)`` works);
* no larger than the cap its kind states (:data:`RECORD`, ...), checked on the size
  the file reports and again while reading, so a file that grows meanwhile is still cut
  off: what is read whole is never more than its cap in memory.

The file is opened without blocking (``O_NONBLOCK``) and checked on the descriptor
(``fstat``), so a path swapped for a FIFO or a device between the check and the open is
still refused rather than waited on. Each refusal is one :class:`UsageError` line naming
the file, what it is, and the fix.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from typing import NamedTuple

from attnprof.atomic import KERNEL_TREES, describe_mode
from attnprof.errors import UsageError
from attnprof.formatting import format_bytes

__all__ = ["CONFIG", "RECORD", "TOML", "Cap", "check_folder", "check_input", "open_input",
           "read_input"]


class Cap(NamedTuple):
    """The most bytes an input of one kind may hold, and the kind, for the message."""

    bytes: int
    kind: str


#: A record (``--json`` output, ``--resume``): decoded whole, its Python objects take
#: several times its size. A sweep of thousands of points is a few MiB.
RECORD = Cap(256 << 20, "an attnprof record")
#: A budgets or expectations file: written by hand, a few KiB.
TOML = Cap(4 << 20, "a budgets or expectations file")
#: A ``config.json``: transformers configs are KiB; one with a large id2label map, a MiB.
CONFIG = Cap(16 << 20, "a model's config.json")

_READ = 1 << 20  # bytes per read while reading a file whole


def check_input(path: str | os.PathLike[str], source: str, *, cap: Cap | None = None,
                fix: str = "", pipes: bool = False) -> os.stat_result:
    """The status of the input ``path`` (symlinks followed), or :class:`UsageError` when it
    is not a readable regular file within ``cap`` (FIFOs too, with ``pipes``).

    ``source`` names the file in messages (``"record 'r.json'"``); ``fix`` says what to
    give instead of a file too large (``"pass a file written by attnprof --json"``)."""
    text = os.fspath(path)
    if not text.strip():
        raise UsageError(f"{source} is an empty path; give a file name")
    try:
        found = os.stat(text)
    except FileNotFoundError:
        raise _not_found(text, source) from None
    except NotADirectoryError:
        raise UsageError(f"cannot read {source}: a part of its path is a file, not a folder; "
                         "check the path") from None
    except OSError as exc:
        raise _cannot(source, exc) from None
    _check_status(found, text, source, cap, fix, pipes)
    return found


def open_input(path: str | os.PathLike[str], source: str, *, cap: Cap | None = None,
               fix: str = "", pipes: bool = False) -> io.BufferedReader:
    """``path`` opened for reading after :func:`check_input`, and checked again on the open
    descriptor. A FIFO (with ``pipes``) is opened as usual: it waits for its writer."""
    text = os.fspath(path)
    found = check_input(text, source, cap=cap, fix=fix, pipes=pipes)
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
    if not stat.S_ISFIFO(found.st_mode):
        flags |= getattr(os, "O_NONBLOCK", 0)  # something swapped in: refused, not awaited
    try:
        fd = os.open(text, flags)
    except FileNotFoundError:
        raise _not_found(text, source) from None
    except OSError as exc:
        raise _cannot(source, exc) from None
    try:
        _check_status(os.fstat(fd), text, source, cap, fix, pipes)
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_input(path: str | os.PathLike[str], source: str, *, cap: Cap, fix: str = ""
               ) -> bytes:
    """The whole content of the regular file ``path``, within ``cap``: a larger one is
    refused, saying the cap, whatever size it reported (one that grows while read too)."""
    with open_input(path, source, cap=cap, fix=fix) as fh:
        parts: list[bytes] = []
        held = 0
        try:
            while chunk := fh.read(min(_READ, cap.bytes + 1 - held)):
                parts.append(chunk)
                held += len(chunk)
                if held > cap.bytes:
                    raise _too_large(source, None, cap, fix)
        except OSError as exc:
            raise _cannot(source, exc) from None
    return b"".join(parts)


def check_folder(path: str | os.PathLike[str], source: str, fix: str) -> None:
    """:class:`UsageError` unless ``path`` is a folder (symlinks followed), saying what it
    is instead: nothing, a loop of symbolic links, a FIFO, a regular file, ..."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        why = "nothing is there"
    except OSError as exc:
        why = ("it is a loop of symbolic links" if exc.errno == errno.ELOOP
               else f"it cannot be read ({exc.strerror or exc})")
    else:
        if stat.S_ISDIR(mode):
            return
        why = f"it is {describe_mode(mode)}"
    raise UsageError(f"{source} is not a folder: {why}; {fix}")


def _check_status(found: os.stat_result, text: str, source: str, cap: Cap | None, fix: str,
                  pipes: bool) -> None:
    mode = found.st_mode
    if stat.S_ISFIFO(mode) and pipes:
        return
    if not stat.S_ISREG(mode):
        what = describe_mode(mode)
        if stat.S_ISFIFO(mode):
            fix = "save what it sends to a file and give that"
        raise UsageError(f"cannot read {source}: it is {what}, not a regular file; "
                         f"{fix or 'give a file'}")
    real = os.path.realpath(text)
    for tree in KERNEL_TREES:
        if real == tree or real.startswith(tree + os.sep):
            raise UsageError(f"cannot read {source}: it is under {tree}, the kernel's "
                             f"interface, not a file of data; {fix or 'give a file'}")
    if cap is not None and found.st_size > cap.bytes:
        raise _too_large(source, found.st_size, cap, fix)


def _too_large(source: str, size: int | None, cap: Cap, fix: str) -> UsageError:
    """``size`` None: the file reported a smaller size, but held more while being read."""
    told = format_bytes(size) if size is not None else f"more than {format_bytes(cap.bytes)}"
    return UsageError(f"cannot read {source}: it is {told}, over the {format_bytes(cap.bytes)} "
                      f"cap on {cap.kind}{'; ' + fix if fix else ''}")


def _not_found(text: str, source: str) -> UsageError:
    try:
        target = os.readlink(text)
    except OSError:  # not a link (or a folder on the way is missing)
        return UsageError(f"cannot read {source}: not found; check the path")
    return UsageError(f"cannot read {source}: it is a symbolic link to {target!r}, which "
                      "does not exist; point the link at the file")


def _cannot(source: str, exc: OSError) -> UsageError:
    if exc.errno == errno.ELOOP:
        why = "it is a loop of symbolic links; point the link at the file"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why = f"{exc.strerror}; check its permissions"
    elif exc.errno == errno.ENAMETOOLONG:
        why = "the name is too long; check the path"
    else:
        why = f"{exc.strerror or exc}; check the path"
    return UsageError(f"cannot read {source}: {why}")

