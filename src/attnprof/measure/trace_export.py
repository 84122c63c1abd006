"""Write a torch.profiler Chrome trace that is valid JSON, whatever the names in it.

Kineto writes the trace's text itself and escapes nothing: a ``"`` in an event name (a
``record_function("my \\"fast\\" attention")`` label, or attnprof's own region label of a
variant whose file path holds a quote) ends the JSON string early, and every ``\\`` of a
metadata value becomes ``/`` — so the escapes of a JSON block handed to
``add_metadata_json`` (``\\"``, ``\\u00e9``) come out as ``/"`` and ``/u00e9``, and the file
does not load. So attnprof's metadata block goes in as a placeholder string (letters,
digits and ``-`` only) that is replaced by the block's own JSON encoding once kineto has
written the file; a line kineto wrote whose string value does not parse (an unescaped
quote) has that value encoded again; and the text is checked to be one JSON document
before it is written. What still does not parse raises :class:`TraceExportError`, and
nothing is written.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import secrets
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from attnprof.atomic import atomic_path

__all__ = ["TraceExportError", "metadata_token", "write_chrome_trace"]


class TraceExportError(ValueError):
    """The exported trace is not JSON, even once its names are escaped."""


class _Any(msgspec.Struct):
    """Decoding into a struct without fields parses (and checks) every value, keeping none."""


_CHECK = msgspec.json.Decoder(_Any)
#: One ``"key": "value"`` member on a line of its own, as kineto writes them; the value is
#: everything up to the line's last quote (kineto writes an inner quote as it is).
_MEMBER = re.compile(rb'^([ \t]*"[^"\r\n]*": )"(.*)"(,?[ \t]*\r?)$', re.MULTILINE)


def metadata_token() -> str:
    """A fresh placeholder for a metadata block: JSON text that kineto copies unchanged
    (a string of letters, digits and ``-``) and that no trace holds by chance."""
    return f'"attnprof-metadata-{secrets.token_hex(12)}"'


def write_chrome_trace(prof: Any, path: Path, token: str, block: dict[str, Any]) -> Path:
    """Export ``prof``'s trace to ``path`` (gzip'd, atomically) with ``block`` in place of
    ``token`` (a :func:`metadata_token` given to ``add_metadata_json``).

    Raises :class:`TraceExportError` when the text cannot be made valid JSON, and
    ``ValueError`` when ``block`` cannot be encoded (a lone surrogate): ``path`` is then
    left as it was."""
    encoded = msgspec.json.encode(block)  # escapes what JSON needs; NaN becomes null
    fd, raw = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".json", dir=path.parent)
    os.close(fd)
    try:
        prof.export_chrome_trace(raw)
        data = Path(raw).read_bytes()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(raw)
    data = checked_json(data.replace(token.encode(), encoded, 1))
    with atomic_path(path, suffix=".json.gz") as tmp, gzip.open(tmp, "wb") as fh:
        fh.write(data)
    return path


def checked_json(data: bytes) -> bytes:
    """``data`` if it is one JSON document; else with the string values kineto left
    unescaped encoded again, if that makes it one; else :class:`TraceExportError`."""
    try:
        _CHECK.decode(data)
        return data
    except msgspec.DecodeError:
        pass
    repaired = _MEMBER.sub(_escaped, data)
    try:
        _CHECK.decode(repaired)
    except msgspec.DecodeError as exc:
        raise TraceExportError(f"the profiler wrote a trace that is not JSON ({exc})") from None
    return repaired


def _escaped(match: re.Match[bytes]) -> bytes:
    key, value, tail = match.groups()
    try:
        msgspec.json.decode(b'"' + value + b'"')
        return match.group(0)  # a value that parses is kept as written
    except msgspec.DecodeError:
        text = value.decode("utf-8", "replace")
        return key + msgspec.json.encode(text) + tail
