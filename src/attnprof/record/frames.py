"""Records as DataFrames, for notebooks: the flat tables of :mod:`attnprof.record.flat`
in pandas (the default) or polars — the same columns as the CSV, values typed.

Both libraries are optional (``pip install 'attnprof[frames]'``) and imported only here.
"""

from __future__ import annotations

from typing import Any

from attnprof.errors import UsageError
from attnprof.record.base import RecordBase
from attnprof.record.flat import flat_table

__all__ = ["LIBRARIES", "to_frame"]

#: The DataFrame libraries ``to_frame`` makes frames of.
LIBRARIES = ("pandas", "polars")


def to_frame(record: RecordBase, library: str = "pandas") -> Any:
    """A DataFrame of ``record``: one row per variant, point, region, layer or diff row."""
    if library not in LIBRARIES:
        raise UsageError(f"to_frame({library!r}): the library must be one of "
                         f"{', '.join(LIBRARIES)}")
    columns, lines = flat_table(record)
    try:
        module = __import__(library)
    except ImportError:
        raise UsageError(f"to_frame({library!r}) needs {library}; install it with pip "
                         "install 'attnprof[frames]'") from None
    if library == "pandas":
        return module.DataFrame.from_records(lines, columns=list(columns))
    rows = [{c: line.get(c) for c in columns} for line in lines]
    # Every line is read to choose each column's type (a column may be None at first);
    # integers and floats in one column become floats.
    return module.from_dicts(rows, schema=list(columns), infer_schema_length=None,
                             strict=False)
