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
from typing import Union

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.check import CheckRecord
from attnprof.record.codec import convert_record, read_head, read_record_file
from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import RecommendRecord, SweepRecord

__all__ = ["RECORD_TYPES", "Record", "decode_record", "is_record_file", "load_record"]

#: Every record kind, the order they were added in.
RECORD_TYPES: tuple[type, ...] = (CompareRecord, ProfileRecord, AnalyzeRecord, ModelRecord,
                                  SweepRecord, RanksRecord, DiffRecord, CheckRecord,
                                  LimitsRecord, RecommendRecord)
Record = Union[CompareRecord, ProfileRecord, AnalyzeRecord,  # noqa: UP007 (runtime union)
               ModelRecord, SweepRecord, RanksRecord, DiffRecord, CheckRecord, LimitsRecord,
               RecommendRecord]


def decode_record(data: bytes | str, source: str = "record") -> Record:
    """Decode and validate any record kind; raise :class:`UsageError` naming ``source``."""
    record: Record = convert_record(read_head(data, source), Record, source)
    return record


def load_record(path: str | os.PathLike[str]) -> Record:
    """Read the record at ``path`` (any kind)."""
    return decode_record(read_record_file(path), source=repr(str(path)))


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
