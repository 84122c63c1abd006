"""Records to put in the stores the tests make (real ones: the schema-1 fixture
upgraded on load, re-identified as new runs)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from attnprof.record.base import new_run_id
from attnprof.record.compare import CompareRecord
from attnprof.record.family import load_record

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "compare-v1.json"


def fresh_record(**changes: object) -> CompareRecord:
    """A real comparison record (attnprof 0.1's, upgraded) with a new run id."""
    record = load_record(FIXTURE)
    assert isinstance(record, CompareRecord)
    return msgspec.structs.replace(record, **{"run_id": new_run_id(), **changes})
