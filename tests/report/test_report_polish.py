"""Compare and profile pages a person would paste into a design review (issue 33, "a report
that leads with the answer"), checked in headless Chromium: no Vega action menus, each
single-view figure as wide as the page, the roofline's ceilings labelled on axes that span
the data by whole decades (a gridline a decade, not 0.01 to 10,000 with minor lines), the
findings of every trace the comparison took, and no "CPU dispatch ms" column on a CPU,
where it would repeat the median."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from chromium import open_page

from attnprof.record.compare import CompareRecord
from attnprof.render import HtmlRenderer, write_rendered
from attnprof.render.figures import figures_of
from attnprof.render.figures.compare import roofline_points

_LOOK = {
    "menus": "document.querySelectorAll('details[title], .vega-actions').length",
    "widths": """JSON.stringify(Array.from(document.querySelectorAll('figure.plot')).map(f => {
        const box = f.querySelector('div.vega'), svg = box.querySelector('svg');
        return [f.dataset.figure, box.getBoundingClientRect().width,
                svg ? svg.getBoundingClientRect().width : 0]; }))""",
    "headers": """JSON.stringify(Array.from(document.querySelectorAll(
        "table[data-table$='-results'] th")).map(t => t.textContent.trim()))""",
    "roofline": """JSON.stringify(Array.from(document.querySelectorAll(
        "figure[data-figure='roofline'] svg text")).map(t => t.textContent))""",
}


@pytest.fixture(scope="module")
def traced_compare(tmp_path_factory: pytest.TempPathFactory) -> CompareRecord:
    """A comparison that measured this machine's ceilings and traced each variant."""
    from attnprof.run.compare import compare
    from attnprof.workload.settings import CaptureSpec, Settings, TimingPlan

    plan = TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3, max_samples=5,
                      min_warmup_calls=1)
    settings = Settings(plan=plan, trace_dir=str(tmp_path_factory.mktemp("traces")),
                        trace=CaptureSpec(steps=1))
    record = compare(variants=["naive", "sdpa"], settings=settings, batch=1, heads=2,
                     kv_heads=1, seq=64, head_dim=16, device="cpu")
    assert record.kind == "compare" and record.ceilings is not None
    assert all(r.analysis is not None for r in record.results)
    return record


def _decades(values: list[float]) -> tuple[int, int]:
    logs = [math.log10(v) for v in values]
    return math.floor(min(logs)), math.ceil(max(logs))


def test_the_roofline_spans_its_data_by_decades_with_labelled_ceilings(
        traced_compare: CompareRecord) -> None:
    record = traced_compare
    assert record.ceilings is not None
    peak = record.ceilings.matmul_tflops_per_s
    bandwidth = record.ceilings.bandwidth_gbytes_per_s
    (roofline,) = [f for f in figures_of(record) if f.name == "roofline"]
    layers = roofline.spec["layer"]
    x = layers[0]["encoding"]["x"]
    lo, hi = x["scale"]["domain"]
    points = roofline_points(record)
    ridge = peak * 1000 / bandwidth
    intensities = [p["flops"] / p["bytes"] for p in points] + [ridge]
    first, last = _decades(intensities)
    assert math.log10(lo) == pytest.approx(first)
    assert math.log10(hi) == pytest.approx(max(last, first + 1))
    assert lo <= min(intensities) and max(intensities) <= hi
    assert hi / lo < 1e5  # never the fixed 0.01 .. 10,000 again
    assert x["axis"]["values"] == pytest.approx(
        [10.0 ** e for e in range(round(math.log10(lo)), round(math.log10(hi)) + 1)])
    y_lo, y_hi = layers[0]["encoding"]["y"]["scale"]["domain"]
    assert y_lo <= min(p["tflops"] for p in points) and peak <= y_hi
    texts = [layer["data"]["values"][0]["text"] for layer in layers[2:]]
    assert texts == [f"matmul ceiling {peak:.3g} TFLOP/s", f"copy ceiling {bandwidth:.3g} GB/s"]
    assert all(len(line) <= 110 for line in roofline.spec["title"]["subtitle"])


@pytest.mark.parametrize("kind", ["compare", "profile"])
def test_the_page_is_full_width_without_menus_with_findings(
        kind: str, traced_compare: CompareRecord, records_by_kind: dict[str, Any],
        tmp_path: Path) -> None:
    record = traced_compare if kind == "compare" else records_by_kind["profile"]
    path = tmp_path / f"{kind}.html"
    write_rendered(HtmlRenderer(), record, path)
    view = open_page(path, evaluate=_LOOK)
    assert view.console_errors == [] and view.requests == []
    assert view.values["menus"] == 0
    widths = {name: (box, svg) for name, box, svg in json.loads(view.values["widths"])}
    single = [f.name for f in figures_of(record)
              if not any(k in f.spec for k in ("hconcat", "vconcat", "concat", "facet",
                                               "repeat"))]
    assert single
    for name in single:
        box, svg = widths[name]
        assert box > 900 and svg >= 0.95 * box, (name, box, svg)  # the 1300-pixel window
    headers = json.loads(view.values["headers"])
    assert "median ms" in headers and "CPU dispatch ms" not in headers  # timed on the CPU
    findings = [f.title for r in record.results if r.analysis for f in r.analysis.findings]
    assert findings and len(view.dom["findings"]) >= len(findings)
    for title in findings:
        assert any(title in shown for shown in view.dom["findings"]), title
    if kind == "compare":
        texts = json.loads(view.values["roofline"])
        assert any(t.startswith("matmul ceiling") for t in texts)
        assert any(t.startswith("copy ceiling") for t in texts)
