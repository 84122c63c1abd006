"""JSON rendering of trace reports: the msgspec encoding of the report, versioned.

``attnprof analyze --json`` writes an :class:`~attnprof.record.trace_report.AnalysisRecord`
(one report per trace); ``attnprof profile --json`` embeds each report in the run record
instead. Files are written atomically, so a reader never sees half of one.
"""

from __future__ import annotations

import os

from attnprof.atomic import write_atomic
from attnprof.record.trace_report import AnalysisRecord, TraceReport

__all__ = ["render_json", "write_analysis_json"]


def render_json(reports: list[TraceReport]) -> bytes:
    """The ``attnprof analyze --json`` document for ``reports``."""
    return AnalysisRecord(reports=reports).to_json()


def write_analysis_json(path: str | os.PathLike[str], reports: list[TraceReport]) -> None:
    """Write :func:`render_json` of ``reports`` to ``path`` atomically."""
    write_atomic(path, render_json(reports))
