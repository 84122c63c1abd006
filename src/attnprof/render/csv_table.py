"""CSV: the flat tables of :mod:`attnprof.record.flat` — one line per variant (a
comparison), per point and variant (a sweep), per region (an analysis), per layer of each
run (a model), per rank (a rank set), per row and metric (a diff) — for spreadsheets and
plots.

Each comparison line carries the workload's fields too, so the files of several runs (other
shapes, dtypes, machines) concatenate into one table. Numbers are written as measured,
unrounded; an absent value is an empty cell.
"""

from __future__ import annotations

import csv
import io
from typing import Any, ClassVar

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.compare import CompareRecord
from attnprof.record.family import Record
from attnprof.record.flat import (
    ANALYSIS_COLUMNS,
    COLUMNS,
    MODEL_COLUMNS,
    RANK_COLUMNS,
    analysis_lines,
    compare_lines,
    flat_table,
    model_lines,
    ranks_lines,
    sweep_lines,
)
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import SweepRecord

__all__ = ["ANALYSIS_COLUMNS", "COLUMNS", "MODEL_COLUMNS", "RANK_COLUMNS", "CsvRenderer",
           "render_analysis_csv", "render_csv", "render_model_csv", "render_ranks_csv",
           "render_sweep_csv"]


class CsvRenderer:
    """One line per variant, point, region, layer, rank or diff row, with a header."""

    name: ClassVar[str] = "csv"
    extension: ClassVar[str] = ".csv"
    output_is_binary: ClassVar[bool] = False

    def render(self, record: Record) -> str:
        """The CSV text of ``record``."""
        return _table(*flat_table(record))


def render_csv(record: CompareRecord) -> str:
    """The CSV text of a comparison: a header and one line per variant."""
    return _table(COLUMNS, compare_lines(record))


def render_sweep_csv(record: SweepRecord) -> str:
    """The CSV text of a sweep: the comparison's columns, one line per point and variant."""
    return _table(COLUMNS, sweep_lines(record))


def render_analysis_csv(record: AnalyzeRecord) -> str:
    """The CSV text of an analysis: a header and one line per region of every trace."""
    return _table(ANALYSIS_COLUMNS, analysis_lines(record))


def render_model_csv(record: ModelRecord) -> str:
    """The CSV text of a model run: one line per layer of each run."""
    return _table(MODEL_COLUMNS, model_lines(record))


def render_ranks_csv(record: RanksRecord) -> str:
    """The CSV text of a rank set: one line per rank (an unreadable one with its error)."""
    return _table(RANK_COLUMNS, ranks_lines(record))


def _table(columns: tuple[str, ...], lines: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return out.getvalue()
