"""``attnprof analyze --json``: the analysis of one or more traces, one report each."""

from __future__ import annotations

import msgspec

from attnprof.record.base import RecordBase
from attnprof.record.trace_report import TraceReport

__all__ = ["AnalyzeRecord"]


class AnalyzeRecord(RecordBase, tag="analyze"):
    """The reports of the traces given, in the order given (folders by name)."""

    reports: list[TraceReport] = msgspec.field(default_factory=list)
