"""``to_frame()`` on every record kind: pandas by default, polars on request, the same
columns as the CSV, one row per variant / point / region / layer / diff row."""

from __future__ import annotations

import csv
import io
import math

import pytest

from attnprof.errors import UsageError
from attnprof.record.flat import flat_table
from attnprof.render import CsvRenderer

KINDS = ("compare", "profile", "analyze", "sweep", "model", "diff", "diff-trace")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_to_frame(kind: str, library: str, records_by_kind: dict[str, object]) -> None:
    pytest.importorskip(library)
    record = records_by_kind[kind]
    frame = record.to_frame(library)  # type: ignore[attr-defined]
    columns, lines = flat_table(record)  # type: ignore[arg-type]
    assert list(frame.columns) == list(columns)
    assert frame.shape == (len(lines), len(columns))
    written = list(csv.DictReader(io.StringIO(CsvRenderer().render(record))))  # type: ignore[arg-type]
    assert len(written) == len(frame)
    rows = frame.to_dict("records") if library == "pandas" else frame.to_dicts()
    for row, line in zip(rows, lines, strict=True):  # typed values, as measured
        for column in columns:
            value, expected = row[column], line.get(column)
            if expected is None:
                assert value is None or (isinstance(value, float) and math.isnan(value))
            elif isinstance(expected, float):
                assert value == pytest.approx(expected)
            else:
                assert value == expected


def test_compare_frame_has_a_row_per_variant(records_by_kind: dict[str, object]) -> None:
    pytest.importorskip("pandas")
    record = records_by_kind["compare"]
    frame = record.to_frame()  # type: ignore[attr-defined]
    assert list(frame["variant"]) == [r.variant for r in record.results]  # type: ignore[attr-defined]
    assert frame["median_ms"].dtype.kind == "f"


def test_unknown_library(records_by_kind: dict[str, object]) -> None:
    with pytest.raises(UsageError, match="one of pandas, polars"):
        records_by_kind["compare"].to_frame("excel")  # type: ignore[attr-defined]


def test_load_a_file_or_a_stored_run(records_by_kind: dict[str, object], tmp_path) -> None:
    import attnprof
    from attnprof.store import open_store

    record = records_by_kind["compare"]
    path = tmp_path / "run.json"
    record.save(path)  # type: ignore[attr-defined]
    assert attnprof.load(path) == record
    with open_store(tmp_path / "s.db", create=True) as store:
        store.save(record, label="mine")  # type: ignore[arg-type]
    assert attnprof.load("mine", store=tmp_path / "s.db") == record
    with pytest.raises(UsageError, match="no stored run 'nothing'"):
        attnprof.load("nothing", store=tmp_path / "s.db")
