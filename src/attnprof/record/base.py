"""What every record has: a kind, a version, a run id, when it was made, whether it is
finished, and one way to be written and read back.

The family is a ``msgspec`` tagged union on ``kind`` (see :mod:`attnprof.record.family`):
a file names its kind, and decoding it gives that kind's typed struct, validated. Each
kind lives in a module of its own and subclasses :class:`RecordBase`.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

import msgspec

from attnprof._version import __version__
from attnprof.atomic import write_atomic

__all__ = ["SCHEMA_VERSION", "RecordBase", "RunStatus", "new_run_id", "now_iso"]

#: Version of the record files this attnprof writes. 1: compare records with untyped
#: workload/settings and analyze files without run id; 2: the typed, tagged family; 3:
#: check, limits and recommend records of their own, budgets verdicts in the records.
SCHEMA_VERSION = 3

RunStatus = Literal["complete", "partial"]

R = TypeVar("R", bound="RecordBase")


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second (what ``created`` holds)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    """A sortable, unique id: ``20261130T104247Z-3f9a1c`` (UTC time and 24 random bits)."""
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{os.urandom(3).hex()}"


class RecordBase(msgspec.Struct, kw_only=True, tag_field="kind"):
    """The fields every record kind shares. ``status`` is ``partial`` until the run ends."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = msgspec.field(default_factory=new_run_id)
    created: str = msgspec.field(default_factory=now_iso)
    status: RunStatus = "partial"
    #: The attnprof version that wrote the record.
    attnprof: str = __version__

    @property
    def kind(self) -> str:
        """The record's kind, as written in its ``kind`` field."""
        return str(self.__struct_config__.tag)

    def to_json(self) -> bytes:
        """Pretty JSON bytes (NaN/inf become null, as JSON has no such numbers)."""
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically to ``path``."""
        write_atomic(path, self.to_json())

    def to_frame(self, library: str = "pandas") -> Any:
        """A DataFrame of the record, one row per variant / point / region / layer / diff
        row, the CSV's columns (``library``: ``pandas`` or ``polars``; the ``frames``
        extra installs both)."""
        from attnprof.record.frames import to_frame

        return to_frame(self, library)

    @classmethod
    def from_json(cls: type[R], data: bytes | str, source: str = "record") -> R:
        """Decode and validate a record of this kind (or a subkind); ``UsageError`` naming
        ``source`` for anything else. Schema-1 files are upgraded on the way in."""
        from attnprof.record.family import decode_record

        return _of_kind(cls, decode_record(data, source), source)

    @classmethod
    def load(cls: type[R], path: str | os.PathLike[str]) -> R:
        """Read a record saved by :meth:`save`."""
        from attnprof.record.family import load_record

        return _of_kind(cls, load_record(path), repr(str(path)))


def _of_kind(cls: type[R], record: RecordBase, source: str) -> R:
    if not isinstance(record, cls):
        from attnprof.errors import UsageError

        want = cls.__struct_config__.tag or cls.__name__
        raise UsageError(f"{source} is a {record.kind!r} record, not {want!r}; pass a file "
                         f"written by attnprof {want}")
    return record
