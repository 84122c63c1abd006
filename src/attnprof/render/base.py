"""What a renderer is: it takes a record and writes one format. It never computes.

Every renderer has a ``name`` (the registry key), the file ``extension`` its output is
written with, ``output_is_binary`` (pyinstrument's flag: ``render`` returns ``bytes``
rather than ``str``), and ``render(record)`` for every kind in the record family
(:data:`attnprof.record.family.RECORD_TYPES`). Options (width, colour, rows per table)
are given when it is built, so every renderer is called the same way.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, ClassVar, Protocol

from attnprof.atomic import write_atomic

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["Renderer", "write_rendered"]


class Renderer(Protocol):
    """Formats a record as text or bytes."""

    name: ClassVar[str]
    extension: ClassVar[str]
    output_is_binary: ClassVar[bool]

    def render(self, record: Record) -> str | bytes:
        """The whole output for ``record``."""
        ...


def write_rendered(renderer: Renderer, record: Record, path: str | os.PathLike[str]) -> None:
    """Render ``record`` and write it to ``path`` atomically."""
    out = renderer.render(record)
    write_atomic(path, out if isinstance(out, bytes) else out.encode())
