"""The typed record family: every kind round-trips, old files load, kinds are checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnprof.errors import UsageError
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import SCHEMA_VERSION, RecordBase, new_run_id
from attnprof.record.compare import CompareRecord, RunRecord
from attnprof.record.family import decode_record, load_record

V1 = Path(__file__).resolve().parents[1] / "fixtures" / "records"


@pytest.mark.parametrize("kind", ["compare", "profile", "analyze", "ranks"])
def test_every_kind_round_trips(kind: str, records_by_kind: dict[str, object],
                                tmp_path: Path) -> None:
    record = records_by_kind[kind]
    path = tmp_path / f"{kind}.json"
    record.save(path)  # type: ignore[attr-defined]
    data = json.loads(path.read_text())
    assert data["kind"] == kind and data["schema_version"] == SCHEMA_VERSION
    assert data["run_id"] and data["created"] and data["status"] == "complete"
    again = load_record(path)
    assert again == record and type(again) is type(record)


def test_workload_and_settings_are_typed(records_by_kind: dict[str, object]) -> None:
    record = records_by_kind["compare"]
    assert isinstance(record, CompareRecord)
    assert record.workload.kv_heads == 1 and record.workload.kv_seq == 32  # spelled out
    assert record.settings.plan.max_samples == 5 and record.settings.trace_dir is None


def test_schema_1_comparison_loads_with_its_values() -> None:
    raw = json.loads((V1 / "compare-v1.json").read_text())
    record = RunRecord.load(V1 / "compare-v1.json")
    assert raw["schema_version"] == 1 and record.schema_version == SCHEMA_VERSION
    assert record.workload.seq == raw["workload"]["seq"] == 32
    assert record.settings.plan.min_time_s == raw["settings"]["min_time_s"]
    assert record.settings.trace.steps == raw["settings"]["trace_steps"]
    assert [r.variant for r in record.results] == [r["variant"] for r in raw["results"]]
    for row, old in zip(record.results, raw["results"], strict=True):
        assert row.status == old["status"] and row.reason == old["reason"]
        if old["latency_ms"]:
            assert row.latency_ms is not None
            assert row.latency_ms.samples == old["latency_ms"]["samples"]
    assert record.run_id.startswith("v1-") and RunRecord.load(V1 / "compare-v1.json").run_id \
        == record.run_id  # the same old file gets the same id every time


def test_schema_1_profile_and_analysis_load() -> None:
    profiled = RunRecord.load(V1 / "profile-v1.json")  # 0.1 wrote profile records as compare
    (row,) = profiled.results
    assert row.analysis is not None and row.analysis.regions
    analysed = AnalyzeRecord.load(V1 / "analyze-v1.json")
    assert analysed.status == "complete" and analysed.reports[0].regions


def test_the_wrong_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="'analyze' record, not 'compare'"):
        RunRecord.load(V1 / "analyze-v1.json")
    with pytest.raises(UsageError, match="is a 'compare' record"):
        AnalyzeRecord.load(V1 / "compare-v1.json")


@pytest.mark.parametrize("text, needle", [
    ('{"schema_version": 2, "kind": "nonsense"}', "not an attnprof record"),
    ('{"schema_version": 4, "kind": "compare"}', "schema_version 4"),
    ('{"schema_version": true, "kind": "compare"}', "schema_version True"),
    ('{"a":' * 5000 + "1" + "}" * 5000, "nests too deeply"),
    ("[1, 2]", "not valid JSON"),
])
def test_bad_files_are_one_usage_error(text: str, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        decode_record(text)


def test_run_ids_are_unique_and_start_with_the_utc_time() -> None:
    ids = [new_run_id() for _ in range(200)]
    assert len(set(ids)) == len(ids)
    stamp, _, token = ids[0].partition("-")
    assert len(stamp) == 16 and stamp[8] == "T" and stamp.endswith("Z") and len(token) == 6


@pytest.mark.parametrize("kind", ["check", "limits", "recommend", "sweep", "model"])
def test_the_newer_kinds_round_trip(kind: str, records_by_kind: dict[str, object],
                                    tmp_path: Path) -> None:
    record = records_by_kind[kind]
    path = tmp_path / f"{kind}.json"
    record.save(path)  # type: ignore[attr-defined]
    assert json.loads(path.read_text())["kind"] == kind
    again = load_record(path)
    assert again == record and type(again) is type(record)


# Real schema-2 files, written by attnprof at main 8cfe3d3 (before check, limits and
# recommend had kinds of their own) on a tiny CPU workload.
@pytest.mark.parametrize(("name", "kind"), [("compare-v2", "compare"), ("sweep-v2", "sweep"),
                                            ("recommend-v2", "recommend")])
def test_schema_2_files_load(name: str, kind: str) -> None:
    raw = json.loads((V1 / f"{name}.json").read_text())
    record = load_record(V1 / f"{name}.json")
    assert raw["schema_version"] == 2 and record.schema_version == SCHEMA_VERSION
    assert record.kind == kind and record.run_id == raw["run_id"]
    if kind == "recommend":  # a sweep record recommend --json wrote: now a recommend record
        from attnprof.record.sweep import RecommendRecord, SweepRecord

        assert raw["kind"] == "sweep" and isinstance(record, RecommendRecord)
        assert record.recommendation is not None
        assert SweepRecord.load(V1 / f"{name}.json") == record  # still read as a sweep
    if kind == "compare":
        assert [r.variant for r in record.results] == [  # type: ignore[union-attr]
            r["variant"] for r in raw["results"]]
        assert record.budgets is None  # type: ignore[union-attr]


def test_one_kind_loads_without_the_family(tmp_path: Path) -> None:
    # The base sits below every kind: loading one kind, or making its table, reads neither
    # the family nor the other kinds (the cycle base <-> family is cut).
    import subprocess
    import sys

    code = ("import sys; from attnprof.record.compare import RunRecord; "
            f"r = RunRecord.load({str(V1 / 'compare-v1.json')!r}); "
            "cols, lines = r.flat_table(); assert cols[0] == 'variant' and lines; "
            "print(sorted(m for m in sys.modules if m.startswith('attnprof.record.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "attnprof.record.family" not in out and "attnprof.record.sweep" not in out
    with pytest.raises(TypeError, match="no record kind"):
        RecordBase.from_json((V1 / "compare-v1.json").read_bytes())


def test_every_kinds_subkinds_are_defined_beside_it() -> None:
    # RecordBase.load decodes into the kind and the subkinds defined so far: a subkind in
    # another module would be missed until that module happened to be imported.
    from attnprof.record.family import RECORD_TYPES

    for kind in RECORD_TYPES:
        for sub in kind.__subclasses__():
            assert sub.__module__ == kind.__module__, (kind, sub)
