"""Which files a trace argument names: a file as given, a folder as the traces in it, a
pattern as the files it matches; and what a folder holds that is not read, and why."""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["expand_trace_paths", "skipped_note"]

_TRACE_ENDINGS = (".json", ".json.gz")


def expand_trace_paths(given: str) -> list[str]:
    """A file as given; a folder as the ``.json``/``.json.gz`` files in it, by name,
    attnprof's own records left out; a pattern that names no file itself (``rank-*.json``,
    quoted so that the shell left it) as the files it matches, by name. A path that is not
    UTF-8 is refused (its record, JSON, could not name it)."""
    return [_utf8(path, given) for path in _expand(given)]


def _utf8(path: str, given: str) -> str:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        from attnprof.errors import UsageError

        where = "" if path == given else f", found in {given!a}"
        raise UsageError(f"trace {path!a}{where} has a name that is not UTF-8 (bytes of "
                         "another encoding), which a record cannot hold; rename it to "
                         "UTF-8 or move it away") from None
    return path


def _expand(given: str) -> list[str]:
    import glob
    from pathlib import Path

    from attnprof.errors import UsageError

    path = Path(given)
    if not path.exists() and not path.is_symlink() and glob.has_magic(given):
        from attnprof.record.family import is_record_file

        matched = sorted(p for p in glob.glob(given)
                         if Path(p).is_file() and not is_record_file(p))
        if not matched:
            raise UsageError(f"no trace file matches {given!r}; check the pattern (quote it "
                             "so that attnprof, not the shell, expands it)")
        return matched
    if not path.is_dir():
        return [given]
    from attnprof.record.family import is_record_file

    try:
        found = sorted(str(p) for p in path.iterdir()
                       if p.is_file() and p.name.endswith(_TRACE_ENDINGS)
                       and not is_record_file(p))
    except OSError as exc:
        raise UsageError(f"cannot list folder {given} ({exc.strerror or exc}); check its "
                         "permissions, or pass the trace files themselves") from None
    if not found:
        raise UsageError(f"{given} is a folder with no .json or .json.gz trace in it; pass "
                         "trace files or a folder of them")
    return found


def skipped_note(given: str) -> str | None:
    """When ``given`` is a folder, one line naming every entry of it that
    :func:`expand_trace_paths` leaves out, each with why (a FIFO named ``rank-2.json``, a
    loop of links, a folder, a file that is not a trace); ``None`` when it leaves none
    out, or ``given`` is not a folder. A rank missing from a set is then explained, not
    only counted."""
    from attnprof.formatting import safe_text

    if not os.path.isdir(given):
        return None
    try:
        with os.scandir(given) as entries:
            found = sorted((entry.name, entry.path) for entry in entries)
    except OSError:
        return None  # expand_trace_paths has said why the folder cannot be listed
    skipped = [(name, why) for name, path in found
               if (why := _why_skipped(path, name)) is not None]
    if not skipped:
        return None
    named = "; ".join(f"{safe_text(name)} ({why})" for name, why in skipped)
    return f"not read in {safe_text(given)}: {named}"


def _why_skipped(path: str, name: str) -> str | None:
    """Why the folder entry at ``path`` is not read as a trace; ``None`` when it is."""
    from attnprof.atomic import describe_mode
    from attnprof.record.family import is_record_file

    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a loop of symbolic links"
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return "a link to nothing: its target is missing"
        return f"cannot be reached: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "a folder: the traces in it are read only when it is given itself"
    if not stat.S_ISREG(mode):
        return f"{describe_mode(mode)}, not a regular file"
    if not name.endswith(_TRACE_ENDINGS):
        return "not a .json or .json.gz file"
    try:
        if is_record_file(path):
            return "an attnprof record, not a trace"
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    return None
