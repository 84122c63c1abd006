"""What every record has: a kind, a version, a run id, when it was made, whether it is
finished, and one way to be written and read back.

The family is a ``msgspec`` tagged union on ``kind`` (see :mod:`attnprof.record.family`):
a file names its kind, and decoding it gives that kind's typed struct, validated. Each
kind lives in a module of its own and subclasses :class:`RecordBase`; this module names
none of them (it sits below them all): ``SomeRecord.load`` decodes into ``SomeRecord`` and
its subclasses, and each kind makes its own flat table (:meth:`RecordBase.flat_table`).
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Literal, NamedTuple, TypeVar, Union

import msgspec

from attnprof._version import __version__
from attnprof.atomic import write_atomic
from attnprof.errors import UsageError
from attnprof.record import display
from attnprof.record.codec import SCHEMA_VERSION, convert_record, read_head, read_record_file

__all__ = ["SCHEMA_VERSION", "Listing", "RecordBase", "RunStatus", "new_run_id", "now_iso"]

RunStatus = Literal["complete", "partial"]

R = TypeVar("R", bound="RecordBase")


class Listing(NamedTuple):
    """What ``attnprof runs`` lists of a record besides its environment: a one-line
    ``summary``, the variants or implementations it ``names`` (``runs --variant`` filters
    by them), the ``model`` it ran, and the ``device`` of a record without an environment
    (an analysis: its first trace's). The store keeps these beside the record
    (:mod:`attnprof.store.summary`), so each kind says its own (:meth:`RecordBase.listing`)."""

    summary: str
    names: tuple[str, ...] = ()
    model: str | None = None
    device: str | None = None


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

    def headline(self) -> str:
        """The answer in one or two sentences (what the report, the Markdown summary and
        ``summary()`` lead with). Each kind says its own; this is the fallback."""
        return f"attnprof {self.kind} run ({self.status})."

    def subject(self) -> str:
        """What was measured or read, in a few words (the workload, the model, the
        traces); ``""`` when the kind has no one subject."""
        return ""

    def summary(self) -> str:
        """The headline as text: ``print(record.summary())``."""
        return self.headline()

    def listing(self) -> Listing:
        """What ``attnprof runs`` lists of this record (see :class:`Listing`). Each kind
        says its own; this fallback (the kind's name) is what a kind without one shows."""
        return Listing(summary=self.kind)

    def __repr__(self) -> str:
        """One screen (under 2,000 characters): the kind, the run id, what was measured
        and the headline; ``to_json()`` has every field."""
        subject = self.subject()
        head = f"<{type(self).__name__} {self.kind} {self.run_id} ({self.status})"
        text = head + (f" · {_cut(subject, 300)}" if subject else "") + ">\n"
        return text + _cut(self.headline(), _REPR_MAX - len(text))

    def _repr_html_(self) -> str:
        """The record in a notebook: its report's body (headline, tables, findings)
        without the page around it, asking nothing of the network."""
        return display.html_of(self)

    def to_json(self) -> bytes:
        """Pretty JSON bytes (NaN/inf become null, as JSON has no such numbers)."""
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically to ``path``."""
        write_atomic(path, self.to_json())

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The record as a flat table: its columns, and one line (column to value) per
        variant / point / region / layer / diff row (see :mod:`attnprof.record.flat`)."""
        raise TypeError(f"no flat table of {type(self).__name__}")

    def to_frame(self, library: str = "pandas") -> Any:
        """A DataFrame of the record, one row per variant / point / region / layer / diff
        row, the CSV's columns (``library``: ``pandas`` or ``polars``; the ``frames``
        extra installs both)."""
        from attnprof.record.frames import frame_of

        columns, lines = self.flat_table()
        return frame_of(columns, lines, library)

    @classmethod
    def from_json(cls: type[R], data: bytes | str, source: str = "record") -> R:
        """Decode and validate a record of this kind (or a subkind); ``UsageError`` naming
        ``source`` for anything else. Schema-1 files are upgraded on the way in."""
        if cls is RecordBase:  # the kinds defined so far would depend on what was imported
            raise TypeError("RecordBase is no record kind; read any kind with "
                            "attnprof.record.family.load_record")
        head = read_head(data, source)
        kinds = _kinds(cls)
        kind = head.get("kind")
        if isinstance(kind, str) and kind not in kinds:
            want = cls.__struct_config__.tag
            raise UsageError(f"{source} is a {kind!r} record, not {want!r}; pass a file "
                             f"written by attnprof {want}")
        types = tuple(kinds.values())
        # A union of the kind and its subkinds (msgspec tells them apart by tag).
        one_of = types[0] if len(types) == 1 else Union[types]  # noqa: UP007
        record: R = convert_record(head, one_of, source)
        return record

    @classmethod
    def load(cls: type[R], path: str | os.PathLike[str]) -> R:
        """Read a record saved by :meth:`save`."""
        return cls.from_json(read_record_file(path), repr(str(path)))


#: The most characters ``repr(record)`` shows.
_REPR_MAX = 1_990


def _cut(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[:max(0, limit - 1)] + "…"


def _kinds(cls: type[RecordBase]) -> dict[str, type[RecordBase]]:
    """``cls`` and its subclasses, by their ``kind`` tag (the kinds defined so far: a
    subclass is defined when its module is imported, and every kind's subkinds live in
    its own module)."""
    found: dict[str, type[RecordBase]] = {}
    todo = [cls]
    while todo:
        kind = todo.pop()
        tag = kind.__struct_config__.tag
        if isinstance(tag, str):
            found[tag] = kind
        todo += kind.__subclasses__()
    return found
