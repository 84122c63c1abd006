"""Records as DataFrames, for notebooks: the flat tables of :mod:`attnprof.record.flat`
in pandas (the default) or polars — the same columns as the CSV, values typed.

Both libraries are optional (``pip install 'attnprof[frames]'``) and imported only here.
"""

from __future__ import annotations

from typing import Any

from attnprof.errors import UsageError
from attnprof.install import install_command

__all__ = ["LIBRARIES", "frame_of"]

#: The DataFrame libraries ``to_frame`` makes frames of.
LIBRARIES = ("pandas", "polars")


def frame_of(columns: tuple[str, ...], lines: list[dict[str, Any]],
             library: str = "pandas") -> Any:
    """A DataFrame of a record's flat table (:meth:`RecordBase.flat_table
    <attnprof.record.base.RecordBase.flat_table>`): ``columns`` in order, one row per line."""
    if library not in LIBRARIES:
        raise UsageError(f"to_frame({library!r}): the library must be one of "
                         f"{', '.join(LIBRARIES)}")
    try:
        module = __import__(library)
    except ImportError:
        raise UsageError(f"to_frame({library!r}) needs {library}; install it with "
                         f"{install_command('frames')}") from None
    if library == "pandas":
        return module.DataFrame.from_records(lines, columns=list(columns))
    rows = [{c: line.get(c) for c in columns} for line in lines]
    # Every line is read to choose each column's type (a column may be None at first);
    # integers and floats in one column become floats.
    return module.from_dicts(rows, schema=list(columns), infer_schema_length=None,
                             strict=False)
