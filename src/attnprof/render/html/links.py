"""The only links the report makes from outside text: relative file links to traces.

A trace's path is the user's (``analyze`` of a folder holding
``javascript:alert(document.domain),{}.json``): written into ``href`` as it is, it is a
URL with a scheme of the file's choosing. So every segment of the path is
percent-encoded (``:``, ``?``, ``#``, ``%``, quotes, ``<``, ``&``, spaces, controls, bidi
characters and non-UTF-8 bytes alike), which leaves a relative reference with no scheme
and no host: ``./javascript%3Aalert%28document.domain%29%2C%7B%7D.json``.

The page's text shows the path as the terminal does (escaped, cut to a length), which is
not the file's name; the link is made from the path in the record itself, found by that
shown text. A shown path that two paths of the record share gets no link, never a wrong
one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import msgspec

from attnprof.formatting import safe_text
from attnprof.render.html.page import Section

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["file_href", "link_traces"]

#: The record fields that hold a trace's path (a row's ``trace``, a report's ``source``).
_PATH_FIELDS = frozenset({"trace", "source"})


def file_href(path: str) -> str:
    """``path`` as a relative URL reference: each segment percent-encoded (as UTF-8 bytes;
    undecodable bytes as themselves), so no scheme, host, query or fragment can appear.
    An absolute path stays one (``/a/b``: relative to the page's ``file:`` origin)."""
    absolute = path.startswith("/")
    segments = [quote(s.encode("utf-8", "surrogateescape"), safe="")
                for s in path.split("/") if s]
    if not segments:
        return "/" if absolute else "./"
    # One leading "/" only ("//x" would name a host); "./" before a relative one.
    return ("/" if absolute else "./") + "/".join(segments)


def link_traces(sections: Sequence[Section], records: Sequence[Record]) -> None:
    """Give each trace link of ``sections`` (built from the records' shown copies) the
    href of the path the records hold; a path that cannot be told apart gets none."""
    raw: dict[str, str | None] = {}
    for record in records:
        for path in _paths(msgspec.to_builtins(record)):
            shown = safe_text(path)
            raw[shown] = path if raw.get(shown, path) == path else None
    for section in sections:
        for part in (section, *section.parts):
            part.traces = [dataclasses.replace(link, href=_href(raw.get(link.path)))
                           for link in part.traces]


def _href(path: str | None) -> str | None:
    return None if path is None else file_href(path)


def _paths(data: Any) -> Iterator[str]:
    """Every string under a path field, at any depth."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key in _PATH_FIELDS and isinstance(value, str):
                yield value
            elif isinstance(value, dict | list):
                yield from _paths(value)
    elif isinstance(data, list):
        for item in data:
            if isinstance(item, dict | list):
                yield from _paths(item)
