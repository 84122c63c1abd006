"""JSON: the record itself, every field, the same bytes ``--json`` writes.

Readers decode it back with :func:`attnprof.record.family.load_record` (any kind) or
``RunRecord.load`` (a comparison). Files are written atomically, so a reader never sees
half of one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from attnprof.record.family import Record


__all__ = ["JsonRenderer"]


class JsonRenderer:
    """The record's own JSON encoding (pretty-printed, NaN/inf as null)."""

    name: ClassVar[str] = "json"
    extension: ClassVar[str] = ".json"
    output_is_binary: ClassVar[bool] = False

    def render(self, record: Record) -> str:
        """``record.to_json()`` as text."""
        return record.to_json().decode()
