"""What the terminal views show of text that came from outside: escaped and cut, once.

Op, kernel and annotation names come from traces, variant names and paths from users,
reasons from PyTorch and from user code, and a record may be a file someone edited. Any
of them can hold an escape sequence (colour, cursor moves, OSC titles and links), a
newline that forges table lines, NUL, or a bidi override that reorders what follows.
Rather than escape at each of the many places a view builds a cell, the terminal views
draw from a copy of the record in which every string has already been through
:func:`~attnprof.formatting.safe_text` (:func:`terminal_safe`); the record itself, and so
the JSON and CSV, keep the text exactly. Views still put data in ``Text``, never in rich
markup, so brackets in a name are shown, not parsed.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from attnprof.formatting import safe_text

__all__ = ["terminal_safe"]

T = TypeVar("T")


def terminal_safe(value: T, type_: Any = None) -> T:
    """A copy of ``value`` (a record, a struct, a list of them) with every string — field
    values, list items and dict keys at any depth — passed through ``safe_text``.
    ``type_`` is the type to rebuild (default: ``type(value)``; give ``list[Row]`` for a
    list)."""
    cleaned = _clean(msgspec.to_builtins(value))
    rebuilt: T = msgspec.convert(cleaned, type=type_ if type_ is not None else type(value))
    return rebuilt


def _clean(data: Any) -> Any:
    if isinstance(data, str):
        return safe_text(data)
    if isinstance(data, (list, tuple)):  # to_builtins keeps tuples (a breakdown's kernels)
        return [_clean(item) for item in data]
    if isinstance(data, dict):
        return {_clean(k): _clean(v) for k, v in data.items()}
    return data
