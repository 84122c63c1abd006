"""Which files a trace argument names: a file as given, a folder as the traces in it, a
pattern as the files it matches."""

from __future__ import annotations

__all__ = ["expand_trace_paths"]


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

        where = "" if path == given else f", found in {ascii(given)}"
        raise UsageError(f"trace {ascii(path)}{where} has a name that is not UTF-8 (bytes of "
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
                       if p.is_file() and p.name.endswith((".json", ".json.gz"))
                       and not is_record_file(p))
    except OSError as exc:
        raise UsageError(f"cannot list folder {given} ({exc.strerror or exc}); check its "
                         "permissions, or pass the trace files themselves") from None
    if not found:
        raise UsageError(f"{given} is a folder with no .json or .json.gz trace in it; pass "
                         "trace files or a folder of them")
    return found
