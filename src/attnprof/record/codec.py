"""Reading a record file: the JSON, its schema version (older files upgraded), and the
typed decode into the kinds asked for.

Both ways in use it — :meth:`RecordBase.load <attnprof.record.base.RecordBase.load>` for
one kind, :func:`attnprof.record.family.load_record` for any — so it sits below every
kind and names none of them: the caller says which types it accepts.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from attnprof.errors import UsageError
from attnprof.input_files import RECORD, read_input
from attnprof.record.legacy import upgrade

__all__ = ["SCHEMA_VERSION", "convert_record", "read_head", "read_record_file"]

#: Version of the record files this attnprof writes. 1: compare records with untyped
#: workload/settings and analyze files without run id; 2: the typed, tagged family; 3:
#: check, limits and recommend records of their own, budgets verdicts in the records.
SCHEMA_VERSION = 3

_DECODER = msgspec.json.Decoder(dict[str, Any])


def read_record_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the record file at ``path`` (checked as an input: size, kind of file)."""
    return read_input(path, f"record {str(path)!r}", cap=RECORD,
                      fix="pass a file written by attnprof --json")


def read_head(data: bytes | str, source: str) -> dict[str, Any]:
    """The record's JSON object at today's schema version (older ones upgraded);
    :class:`UsageError` naming ``source`` for anything else."""
    try:
        head = _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise UsageError(f"{source} is not valid JSON ({exc}); pass a file written by "
                         "attnprof --json") from None
    except RecursionError:
        raise UsageError(f"{source} nests too deeply to be an attnprof record; pass a "
                         "file written by attnprof --json") from None
    version = head.get("schema_version")
    head = upgrade(head)
    if head.get("schema_version") != SCHEMA_VERSION:
        raise UsageError(f"{source} has schema_version {version!r}, this attnprof reads "
                         f"{SCHEMA_VERSION} (and upgrades 1 and 2); re-run with this version")
    return head


def convert_record(head: dict[str, Any], kinds: Any, source: str) -> Any:
    """``head`` validated as one of ``kinds`` (a record type or a union of them)."""
    try:
        return msgspec.convert(head, type=kinds)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{source} is not an attnprof record: {exc}") from None
