"""Every renderer × every record kind: each shows what the record says, nothing else."""

from __future__ import annotations

import csv
import html
import io
import json
import re

import pytest

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.family import RECORD_TYPES, decode_record
from attnprof.record.flat import diff_lines
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import RecommendRecord, SweepRecord
from attnprof.render import RENDERERS
from attnprof.render.figures import figures_of
from attnprof.render.markdown import markdown_escape
from attnprof.render.safe import terminal_safe
from attnprof.render.terminal import TerminalRenderer

KINDS = ("compare", "compare-statuses", "profile", "analyze", "compare-v1", "sweep", "model",
         "ranks", "diff", "diff-trace", "check", "limits", "recommend")


def test_every_record_type_is_covered(records_by_kind: dict[str, object]) -> None:
    assert {type(r) for r in records_by_kind.values()} == set(RECORD_TYPES)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", RENDERERS)
def test_renderer_on_record_kind(name: str, kind: str, records_by_kind: dict[str, object]
                                 ) -> None:
    record = records_by_kind[kind]
    renderer = RENDERERS[name]()
    out = renderer.render(record)  # type: ignore[arg-type]
    assert isinstance(out, bytes) == renderer.output_is_binary
    if name == "png":  # every figure stacked in one image
        assert isinstance(out, bytes) and out[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(out) > 10_000
        return
    assert isinstance(out, str)
    text = out
    assert text.endswith("\n")
    if name == "svg":  # every figure's title, drawn as text
        assert text.startswith("<svg")
        for figure in figures_of(record):  # type: ignore[arg-type]
            assert _escaped(figure.spec["title"]["text"]) in text
        return
    if name == "html":  # the browser tests (tests/report) open each; here: the content
        assert text.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in text
        assert f'data-kind="{record.kind}"' in text  # type: ignore[attr-defined]
        assert f'data-figure="{figures_of(record)[0].name}"' in text  # type: ignore[arg-type]
        assert 'class="attnprof-record"' in text
        return
    if name == "json":
        assert decode_record(text) == record  # the whole record, losslessly
        return
    if name == "markdown":  # the headline first, then the main table; under 64 KiB
        headline = terminal_safe(record).headline()  # type: ignore[attr-defined]
        assert text.split("\n")[2] == f"**{markdown_escape(headline, None)}**"
        assert "\n|---|" in text and len(text.encode()) < 64 * 1024
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
        if isinstance(record, CheckRecord):
            assert [(x["what"], x["ok"]) for x in lines] == [(r.what, str(r.ok))
                                                            for r in record.rows]
            return
        if isinstance(record, LimitsRecord):
            assert [(x["variant"], x["mode"], x["largest"]) for x in lines] == [
                (c.variant, c.mode, str(c.largest) if c.largest is not None else "")
                for c in record.ceilings]
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
    if isinstance(record, CheckRecord):
        assert all(r.what in text for r in record.rows)
        assert "1 of 2 expectations did not hold" in text
        return
    if isinstance(record, LimitsRecord):
        assert "attnprof limits" in text
        assert all(c.variant in text for c in record.ceilings)
        return
    if isinstance(record, RecommendRecord):
        assert record.recommendation is not None
        assert "attnprof recommend" in text
        assert all(r.best is None or r.best.variant in text or r.tie
                   for r in record.recommendation.recommendations)
        return
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
def test_every_status_reads_the_same_in_every_renderer(name: str,
                                                      records_by_kind: dict[str, object]
                                                      ) -> None:
    """A ``wrong`` row (NaN/Inf, or off the reference) and a ``timeout`` that kept the
    latency of its first round: each renderer names the status, the reason and what was
    kept, and no plot draws a row that is not ``ok`` as if it were."""
    record = records_by_kind["compare-statuses"]
    assert isinstance(record, CompareRecord)
    statuses = [r.status for r in record.results]
    assert statuses == ["ok", "wrong", "wrong", "timeout"]
    ok, nan, off, hung = record.results
    assert nan.nonfinite_values and off.max_abs_error and hung.latency_ms is not None
    kept = next(n for n in hung.notes if n.startswith("kept what finished"))
    renderer = (TerminalRenderer(width=1000) if name == "terminal"  # no cell folded
                else RENDERERS[name]())
    out = renderer.render(record)
    if name in ("svg", "png"):  # the latency plot lists the rows it does not draw
        figure = figures_of(record)[0]
        assert figure.name == "latency"
        subtitle = "\n".join(figure.spec["title"]["subtitle"])
        for row in (nan, off, hung):
            assert f"{row.variant}: {row.status}" in subtitle
        drawn = [v["variant"] for v in figure.spec["data"]["values"]]
        assert drawn == [ok.variant]
        if name == "svg":
            assert isinstance(out, str) and _escaped(f"{hung.variant}: timeout") in out
        return
    assert isinstance(out, str)
    if name == "json":
        assert [r["status"] for r in json.loads(out)["results"]] == statuses
        return
    if name == "csv":
        lines = list(csv.DictReader(io.StringIO(out)))
        assert [x["status"] for x in lines] == statuses
        assert [x["nonfinite_values"] for x in lines][:3] == ["0", "1024", "0"]
        assert lines[3]["median_ms"] and not lines[3]["peak_memory_bytes"]  # kept, not taken
        return
    if name == "markdown":  # each status, and the start of each reason, in the table
        assert [line.split(" | ")[1] for line in out.splitlines()
                if line.startswith("| ") and " | " in line][1:] == statuses
        assert all(markdown_escape(row.reason[:30], None) in out for row in (nan, off, hung))
        return
    # The page's tables, not the record's JSON embedded in it (nor the plots' specs).
    text = html.unescape(re.sub(r"<script.*?</script>", "", out, flags=re.S)) \
        if name == "html" else out
    for row in (nan, off, hung):
        assert row.reason in text
    assert "NaN/Inf" in text and kept in text
    if name == "html":
        assert out.count('class="row-wrong"') == 2 and out.count('class="row-timeout"') == 1
        assert out.count(">wrong<") == 2 and out.count(">NaN/Inf<") == 1


@pytest.mark.parametrize("name", RENDERERS)
def test_renderers_have_distinct_names_and_extensions(name: str) -> None:
    renderer = RENDERERS[name]
    assert renderer.name == name and renderer.extension.startswith(".")
    assert len({r.extension for r in RENDERERS.values()}) == len(RENDERERS)


def _escaped(text: str) -> str:
    """``text`` as an SVG writes it."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
