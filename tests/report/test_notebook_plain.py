"""A record in a notebook without jinja2 (no ``report`` extra): the headline and the flat
table, every value escaped by hand; with it, the report's section, no script."""

from __future__ import annotations

from pathlib import Path

import msgspec

from attnprof.record.compare import CompareRecord
from attnprof.record.family import load_record
from attnprof.render.notebook import plain_html

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def test_the_plain_view_escapes_every_value() -> None:
    record = load_record(RECORDS / "compare-v2.json")
    assert isinstance(record, CompareRecord)
    hostile = msgspec.structs.replace(record.results[0], variant="<img src=x onerror=alert(1)>")
    record = msgspec.structs.replace(record, results=[hostile, *record.results[1:]])
    body = plain_html(record)
    assert "<table>" in body and body.count("<tr>") == 1 + len(record.results)
    assert "<img" not in body and "&lt;img src=x onerror=alert(1)&gt;" in body
    assert "<script" not in record._repr_html_() and "<table" in record._repr_html_()
