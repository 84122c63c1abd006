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
from typing import TYPE_CHECKING, Any, ClassVar

from attnprof.record.flat import ANALYSIS_COLUMNS, COLUMNS, MODEL_COLUMNS, RANK_COLUMNS, flat_table

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["ANALYSIS_COLUMNS", "COLUMNS", "MODEL_COLUMNS", "RANK_COLUMNS", "CsvRenderer",
           "render_csv"]


class CsvRenderer:
    """One line per variant, point, region, layer, rank or diff row, with a header."""

    name: ClassVar[str] = "csv"
    extension: ClassVar[str] = ".csv"
    output_is_binary: ClassVar[bool] = False

    def render(self, record: Record) -> str:
        """The CSV text of ``record``."""
        return render_csv(record)


def render_csv(record: Record) -> str:
    """The CSV text of any record: a header and its flat table's lines (one per variant of
    a comparison, per point and variant of a sweep, ...)."""
    return _table(*flat_table(record))


def _table(columns: tuple[str, ...], lines: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(lines)
    return out.getvalue()
