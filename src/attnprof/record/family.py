"""The record family: every kind, decoded by its ``kind`` tag, and older files upgraded.

``load_record(path)`` reads any record attnprof writes (``compare``, ``profile``,
``analyze``, ``model``, ``sweep``, ``ranks``, ``diff``, ``check``, ``limits``,
``recommend``) and returns the typed struct of its kind. An older file (schema 1: attnprof
0.1's compare and analyze JSON; schema 2) is upgraded first
(:mod:`attnprof.record.legacy`); any other version, or a file that is not a record, is one
:class:`UsageError` naming the file.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from typing import Any, Union

import msgspec

from attnprof.errors import UsageError
from attnprof.input_files import RECORD, read_input
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import SCHEMA_VERSION
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.legacy import upgrade
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.recommend import RecommendRecord
from attnprof.record.sweep import SweepRecord

__all__ = ["RECORD_TYPES", "Record", "decode_record", "is_record_file", "load_record"]

#: Every record kind, the order they were added in.
RECORD_TYPES: tuple[type, ...] = (CompareRecord, ProfileRecord, AnalyzeRecord, ModelRecord,
                                  SweepRecord, RanksRecord, DiffRecord, CheckRecord,
                                  LimitsRecord, RecommendRecord)
Record = Union[CompareRecord, ProfileRecord, AnalyzeRecord,  # noqa: UP007 (runtime union)
               ModelRecord, SweepRecord, RanksRecord, DiffRecord, CheckRecord, LimitsRecord,
               RecommendRecord]
_DECODER = msgspec.json.Decoder(dict[str, Any])


def decode_record(data: bytes | str, source: str = "record") -> Record:
    """Decode and validate any record kind; raise :class:`UsageError` naming ``source``."""
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
    try:
        return msgspec.convert(head, type=Record)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{source} is not an attnprof record: {exc}") from None


def load_record(path: str | os.PathLike[str]) -> Record:
    """Read the record at ``path`` (any kind)."""
    data = read_input(path, f"record {str(path)!r}", cap=RECORD,
                      fix="pass a file written by attnprof --json")
    return decode_record(data, source=repr(str(path)))


#: A record's JSON opens with its kind (schema 2) or its version (schema 1); a
#: torch.profiler trace opens with ``schemaVersion``, ``deviceProperties`` or
#: ``traceEvents``, never with these.
_RECORD_START = re.compile(rb'\A\s*\{\s*"(?:kind|schema_version)"\s*:')
_HEAD_BYTES = 64 << 10


def is_record_file(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` (``.json`` or gzip'd) is an attnprof record rather than
    a trace, told by content: a record has ``schema_version`` and ``kind``, a trace has
    ``traceEvents``. Reads at most the first 64 KiB; an unreadable file is not a record."""
    try:
        with open(path, "rb") as raw:
            magic = raw.read(2)
            raw.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=raw) as unzipped:
                    head = unzipped.read(_HEAD_BYTES)
            else:
                head = raw.read(_HEAD_BYTES)
    except (OSError, EOFError, ValueError, zlib.error):
        return False
    if _RECORD_START.match(head):
        return True
    # Keys in another order (a tool re-wrote the file): both record keys, no trace events.
    return (b'"schema_version"' in head and b'"kind"' in head
            and b'"traceEvents"' not in head)
