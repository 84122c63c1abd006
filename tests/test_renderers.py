"""Every renderer × every record kind: each shows what the record says, nothing else."""

from __future__ import annotations

import csv
import io

import pytest

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.family import RECORD_TYPES, decode_record
from attnprof.record.flat import diff_lines
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import SweepRecord
from attnprof.render import RENDERERS

KINDS = ("compare", "profile", "analyze", "compare-v1", "sweep", "model", "ranks", "diff",
         "diff-trace")


def test_every_record_type_is_covered(records_by_kind: dict[str, object]) -> None:
    assert {type(r) for r in records_by_kind.values()} == set(RECORD_TYPES)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", RENDERERS)
def test_renderer_on_record_kind(name: str, kind: str, records_by_kind: dict[str, object]
                                 ) -> None:
    record = records_by_kind[kind]
    text = RENDERERS[name]().render(record)  # type: ignore[arg-type]
    assert text.endswith("\n")
    if name == "json":
        assert decode_record(text) == record  # the whole record, losslessly
        return
    if name == "csv":
        lines = list(csv.DictReader(io.StringIO(text)))
        if isinstance(record, DiffRecord):  # one line per row and metric, then per name
            assert len(lines) == len(diff_lines(record)) > 0
            assert {x["state"] for x in lines} <= {
                "compared", "broken", "fixed", "failing", "added", "removed", "more",
                "fewer", "same"}
            return
        if isinstance(record, ModelRecord):  # one line per layer of each run
            expected = [(r.implementation, r.phase, layer.name) for r in record.runs
                        for layer in (r.attribution.layers if r.attribution else [])]
            assert [(x["implementation"], x["phase"], x["layer"]) for x in lines] == expected
            return
        if isinstance(record, RanksRecord):  # one line per rank, an unreadable one too
            assert [(x["rank"], x["source"], x["error"]) for x in lines] == \
                [(str(r.rank), r.source, r.error or "") for r in record.ranks]
            return
        if isinstance(record, AnalyzeRecord):
            regions = [(r.source, g.name) for r in record.reports for g in r.regions]
            assert [(x["source"], x["region_name"]) for x in lines] == regions
        elif isinstance(record, SweepRecord):
            rows = [(str(p.workload.seq), p.workload.mode, r.variant, r.status)
                    for p in record.ordered_points() for r in p.results]
            assert [(x["seq"], x["mode"], x["variant"], x["status"]) for x in lines] == rows
        else:
            assert isinstance(record, CompareRecord)
            assert [x["variant"] for x in lines] == [r.variant for r in record.results]
            assert [x["status"] for x in lines] == [r.status for r in record.results]
        return
    assert name == "terminal"
    if isinstance(record, DiffRecord):
        for row in record.rows:  # every row, with its verdict ("~" when not significant)
            assert all(str(v) in text for v in row.key.values())
        for change in record.changes:
            assert change.what in text and change.new in text
        for trace in record.traces:
            for region in trace.regions:
                assert region.old_name in text and region.new_name in text
                assert all(k.name in text for k in region.changed_kernels()[:15])
            assert all(f in text for f in trace.findings_gone + trace.findings_appeared)
        assert record.rows or record.traces
        return
    if isinstance(record, ModelRecord):
        assert record.model.source in text
        for run in record.runs:
            assert f"{run.implementation} · {run.phase} — per layer" in text
            assert run.attribution is not None
            assert all(layer.name in text for layer in run.attribution.layers)
        assert "KV cache in decode" in text
        return
    if isinstance(record, RanksRecord):
        assert record.findings and record.unreadable and record.steps
        for r in record.ranks:
            assert f"\n│ {r.rank} " in text
            if r.error is not None:
                assert f"rank {r.rank} unreadable: {r.error[:40]}" in text
        assert all(f.title in text for f in record.findings)
        assert all(note[:60] in text for note in record.notes)
        return
    if isinstance(record, AnalyzeRecord):
        for report in record.reports:
            assert report.source in text
            assert all(region.name in text for region in report.regions)
            assert all(f.title in text for f in report.findings)
        return
    if isinstance(record, SweepRecord):
        assert record.status == "complete" and record.fits
        for variant in record.variants:
            assert variant in text
        for point in record.points:
            for row in point.results:
                if row.status != "ok":  # a failure is named with its reason
                    assert row.status in text and row.reason[:40] in text
        for fit in record.fits:
            assert f"{fit.field}^{fit.exponent:.2f}" in text
        return
    assert isinstance(record, CompareRecord)
    assert record.workload.describe() in text
    for row in record.results:
        assert row.variant in text and row.status in text
    if isinstance(record, ProfileRecord):  # each variant's trace report follows the table
        for row in record.results:
            assert row.analysis is not None
            assert all(f.title in text for f in row.analysis.findings)
            assert "time per forward" in text


@pytest.mark.parametrize("name", RENDERERS)
def test_renderers_have_distinct_names_and_extensions(name: str) -> None:
    renderer = RENDERERS[name]
    assert renderer.name == name and renderer.extension.startswith(".")
    assert len({r.extension for r in RENDERERS.values()}) == len(RENDERERS)
