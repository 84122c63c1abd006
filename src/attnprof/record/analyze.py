"""``attnprof analyze --json``: the analysis of one or more traces, one report each."""

from __future__ import annotations

import msgspec

from attnprof.record.base import RecordBase
from attnprof.record.trace_report import TraceReport

__all__ = ["AnalyzeRecord", "UnreadableTrace"]


class UnreadableTrace(msgspec.Struct, kw_only=True):
    """A file of a folder that could not be read or analysed as a trace, and why."""

    source: str
    reason: str


class AnalyzeRecord(RecordBase, tag="analyze"):
    """The reports of the traces given, in the order given (folders by name)."""

    reports: list[TraceReport] = msgspec.field(default_factory=list)
    #: Files of the folders given that could not be read as traces: the others were
    #: analysed all the same (``attnprof analyze`` then exits with status 1).
    unreadable: list[UnreadableTrace] = msgspec.field(default_factory=list)
