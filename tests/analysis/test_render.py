"""Every trace-report renderer on real reports: it shows what the report says, nothing else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.base import SCHEMA_VERSION
from attnprof.record.trace_report import TraceReport
from attnprof.render import JsonRenderer, write_rendered
from attnprof.render.trace_report import render_trace_report


def _terminal(report: TraceReport) -> str:
    console = Console(record=True, width=140, color_system=None)
    render_trace_report(report, console, top=8)
    return console.export_text()


def _json(report: TraceReport) -> str:
    data = JsonRenderer().render(AnalyzeRecord(reports=[report]))
    (back,) = msgspec.json.decode(data, type=AnalyzeRecord).reports
    assert back == report  # the JSON holds the whole report, losslessly
    return data


RENDERERS: dict[str, Callable[[TraceReport], str]] = {"terminal": _terminal, "json": _json}


def _check(text: str, report: TraceReport) -> None:
    for region in report.regions:
        assert region.name in text
    for finding in report.findings:
        assert finding.title in text
        assert finding.fix.split()[0] in text
    for kernel in report.breakdown.kernels[:3]:
        assert kernel.short in text


@pytest.mark.parametrize("renderer", RENDERERS)
def test_renderers_on_cpu_captures_of_every_variant(
        renderer: str, cpu_reports: dict[str, TraceReport]) -> None:
    for report in cpu_reports.values():  # every captured variant (tests/analysis/conftest.py)
        text = RENDERERS[renderer](report)
        _check(text, report)
        kernels = report.regions[0].kernels
        if len(kernels) > 8:  # the terminal shows the top 8 by time, then
            kernels = sorted(kernels, key=lambda k: -k.total_us)[:8]
        for kernel in kernels:
            assert kernel.name in text


@pytest.mark.parametrize("renderer", RENDERERS)
@pytest.mark.parametrize("name", ["mi250_rocm_minitoy.json.gz", "cpu_only.json.gz",
                                  "triton_example.json.gz", "a100_alexnet_inference.json.gz"])
def test_renderers_on_public_traces(renderer: str, name: str, load_public: object) -> None:
    _, report = load_public(name)  # type: ignore[operator]
    _check(RENDERERS[renderer](report), report)


def test_terminal_shows_verdict_launch_details_and_notes(load_public: object) -> None:
    _, report = load_public("triton_example.json.gz")  # type: ignore[operator]
    text = _terminal(report)
    assert "cpu-bound" in text and "cuLaunchKernel" in text and "grid 1x1x1" in text
    assert "16 regs" in text


def test_json_file_is_written_whole(tmp_path: Path, cpu_reports: dict[str, TraceReport]) -> None:
    out = tmp_path / "analysis.json"
    reports = list(cpu_reports.values())
    write_rendered(JsonRenderer(), AnalyzeRecord(reports=reports), out)
    record = msgspec.json.decode(out.read_bytes(), type=AnalyzeRecord)
    assert record.schema_version == SCHEMA_VERSION and record.kind == "analyze"
    assert record.reports == reports
    assert [p.name for p in tmp_path.iterdir()] == ["analysis.json"]  # no temp file left
