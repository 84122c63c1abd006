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
    cleaned = _Cleaner().clean(msgspec.to_builtins(value))
    rebuilt: T = msgspec.convert(cleaned, type=type_ if type_ is not None else type(value))
    return rebuilt


#: What ``msgspec.to_builtins`` gives that holds no text: passed through as it is.
_PLAIN = frozenset({int, float, bool, type(None)})


class _Cleaner:
    """Every string through ``safe_text`` once: a record repeats its names (64 ranks'
    kernels by name are 12k strings of 300 characters, 600 distinct), and checking a
    long name is most of the work."""

    def __init__(self) -> None:
        self._done: dict[str, str] = {}

    def text(self, text: str) -> str:
        safe = self._done.get(text)
        if safe is None:
            safe = self._done[text] = safe_text(text)
        return safe

    def clean(self, data: Any) -> Any:
        # By exact type: to_builtins makes no subclasses.
        kind = type(data)
        if kind is str:
            return self.text(data)
        if kind is dict:
            return {self.text(k) if type(k) is str else self.clean(k):
                    v if type(v) in _PLAIN else self.clean(v) for k, v in data.items()}
        if kind is list or kind is tuple:  # to_builtins keeps tuples (a breakdown's kernels)
            return [item if type(item) in _PLAIN else self.clean(item) for item in data]
        return data
