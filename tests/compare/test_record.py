"""The JSON record: required fields, round trip, versioning, atomic saves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnprof.errors import UsageError
from attnprof.record.base import SCHEMA_VERSION
from attnprof.record.compare import RunRecord
from attnprof.run.compare import compare
from attnprof.workload.problem import Workload

TINY = Workload(batch=1, heads=2, seq=32, head_dim=16)


@pytest.fixture(scope="module")
def record(fast_settings) -> RunRecord:
    return compare(TINY, ["naive", "sdpa-efficient"], settings=fast_settings)


def test_record_has_the_documented_fields(record: RunRecord, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    record.save(path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["status"] == "complete"
    for key in ("torch", "cuda", "cudnn", "device_name", "cpu_model", "threads", "attnprof"):
        assert key in data["environment"]
    assert data["workload"]["heads"] == 2 and data["workload"]["kv_heads"] == 2
    ok, refused = data["results"]
    for key in ("variant", "status", "reason", "latency_ms", "peak_memory_bytes", "flops",
                "flops_convention", "tflops_per_s", "max_abs_error"):
        assert key in ok
    assert set(ok["latency_ms"]) >= {"median", "iqr", "samples"}
    assert len(ok["latency_ms"]["samples"]) == ok["latency_ms"]["count"]
    assert refused["status"] == "unsupported" and refused["reason"]


def test_round_trip_is_lossless(record: RunRecord, tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    record.save(path)
    again = RunRecord.load(path)
    assert again == record
    assert again.workload_spec() == TINY.validate().replace(kv_heads=2, kv_seq=32)


def test_save_leaves_no_temporary_files(record: RunRecord, tmp_path: Path) -> None:
    record.save(tmp_path / "a.json")
    record.save(tmp_path / "a.json")
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_other_schema_versions_are_refused(record: RunRecord) -> None:
    data = json.loads(record.to_json())
    data["schema_version"] = 99
    with pytest.raises(UsageError, match="schema_version 99"):
        RunRecord.from_json(json.dumps(data))


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"schema_version": 1}'])
def test_garbage_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        RunRecord.from_json(text)


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read record"):
        RunRecord.load(tmp_path / "nope.json")
