"""Records as flat tables: one line per variant (a comparison), per point and variant (a
sweep), per region (an analysis), per layer of each run (a model), per row and metric (a
diff), per rank (a rank set), per expectation (a check), per variant and mode (limits).
The CSV renderer writes these lines and
:meth:`~attnprof.record.base.RecordBase.to_frame` makes DataFrames of them, so both have
the same columns (documented in the README's "History and diffs"). Values are as
measured, unrounded; ``None`` where absent.

Each kind makes its own table (:meth:`~attnprof.record.base.RecordBase.flat_table`, the
lines written beside the kind, so that the record's base needs no module above it); this
module gathers the tables' headers and lines under one name for their readers.
"""

from __future__ import annotations

from typing import Any

from attnprof.record.analyze import ANALYSIS_COLUMNS, analysis_lines
from attnprof.record.base import RecordBase
from attnprof.record.check import CHECK_COLUMNS, check_lines
from attnprof.record.compare import COLUMNS, compare_lines
from attnprof.record.diff import DIFF_COLUMNS, diff_lines
from attnprof.record.limits import LIMITS_COLUMNS, limits_lines
from attnprof.record.model import MODEL_COLUMNS, model_lines
from attnprof.record.ranks import RANK_COLUMNS, ranks_lines
from attnprof.record.sweep import sweep_lines

__all__ = ["ANALYSIS_COLUMNS", "CHECK_COLUMNS", "COLUMNS", "DIFF_COLUMNS", "LIMITS_COLUMNS",
           "MODEL_COLUMNS", "RANK_COLUMNS", "analysis_lines", "check_lines", "compare_lines",
           "diff_lines", "flat_table", "limits_lines", "model_lines", "ranks_lines",
           "sweep_lines"]


def flat_table(record: RecordBase) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """The columns and lines of any record kind."""
    return record.flat_table()
