"""Names from users and traces are shown as text everywhere: a variant whose profiler
label is ``<img src=x onerror=alert(1)>`` and a kernel name with ``&``, quotes and an ESC
byte, in the HTML (in a real browser), the plots, the terminal and ``show``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from chromium import open_page

from attnprof.analysis.analyze import analyze_files
from attnprof.cli.main import main
from attnprof.record.family import load_record
from attnprof.render import HtmlRenderer, SvgRenderer, TerminalRenderer, write_rendered
from attnprof.render.images import write_plots

LABEL = "<img src=x onerror=alert(1)>"
KERNEL = "evil&kernel\"quoted'\x1b[31mred"
SHOWN_KERNEL = "evil&kernel\"quoted'\\x1b[31mred"

USER_VARIANT = f'''
import torch
import torch.nn.functional as F


def attn(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    with torch.profiler.record_function({LABEL!r}):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                              is_causal=is_causal, scale=scale,
                                              enable_gqa=enable_gqa)
'''

COUNT_ALERTS = "window.__alerts = 0; window.alert = () => { window.__alerts += 1; };"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, public_traces: Path) -> dict[str, Path]:
    """A profile of the user variant (its label in the trace) and a real GPU trace one of
    whose kernels is renamed, each analysed and saved."""
    tmp = tmp_path_factory.mktemp("hostile")
    user = tmp / "evil.py"
    user.write_text(USER_VARIANT)
    profile = tmp / "profile.json"
    assert main(["profile", f"{user}:attn", "--batch", "1", "--heads", "2", "--kv-heads",
                 "2", "--seq", "32", "--head-dim", "16", "--min-time", "0.02", "--steps",
                 "1", "--out", str(tmp / "traces"), "--json", str(profile)]) == 0
    source = public_traces / "a100_alexnet_inference.json.gz"
    data = json.loads(gzip.decompress(source.read_bytes()))
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    longest = max(kernels, key=lambda e: e.get("dur", 0))["name"]
    for e in data["traceEvents"]:
        if e.get("name") == longest:
            e["name"] = KERNEL
    trace = tmp / "renamed.json.gz"
    trace.write_bytes(gzip.compress(json.dumps(data).encode()))
    analysis = tmp / "analysis.json"
    analyze_files([str(trace)]).save(analysis)
    return {"profile": profile, "analysis": analysis, "tmp": tmp}


def test_the_label_is_in_the_trace_and_the_kernel_in_the_report(
        hostile: dict[str, Path]) -> None:
    profile = load_record(hostile["profile"])
    (row,) = profile.results  # type: ignore[union-attr]
    assert row.status == "ok" and row.analysis is not None
    names = {e.name for e in row.analysis.timeline.events} if row.analysis.timeline else set()
    assert LABEL in names  # the user's label is an op of the step drawn
    analysis = load_record(hostile["analysis"])
    assert any(k.name == KERNEL for k in analysis.reports[0].breakdown.kernels)  # type: ignore[union-attr]


@pytest.mark.parametrize("which", ["profile", "analysis"])
def test_html_in_a_browser_shows_them_as_text(which: str, hostile: dict[str, Path]) -> None:
    record = load_record(hostile[which])
    page = hostile["tmp"] / f"{which}.html"
    write_rendered(HtmlRenderer(), record, page)
    content = page.read_text().split("<footer>")[0]  # the record's part (then the runtime)
    assert "<img" not in content  # only escaped text: &lt;img, \u003cimg in JSON
    assert "\x1b" not in content.split('class="attnprof-record"')[0]  # shown as an escape
    view = open_page(page, before=COUNT_ALERTS)
    assert view.console_errors == [] and view.requests == []
    assert view.dom["images"] == 0 and view.dom["alerts"] == 0
    shown = LABEL if which == "profile" else SHOWN_KERNEL
    assert shown in view.text  # in the tables, as the characters it is made of
    # The plots carry it as data (their tooltips and descriptions), drawn as text by Vega.
    assert all(f["drawn"] == "yes" for f in view.dom["figures"])


@pytest.mark.parametrize("which", ["profile", "analysis"])
def test_plots_and_images_show_them_as_text(which: str, hostile: dict[str, Path]) -> None:
    record = load_record(hostile[which])
    svg = SvgRenderer().render(record)
    assert "<img" not in svg and "\x1b" not in svg
    if which == "profile":
        assert "&lt;img src=x onerror=alert(1)&gt;" in svg
    folder = hostile["tmp"] / f"plots-{which}"
    for path in write_plots(record, folder):
        if path.suffix == ".svg":  # (a PNG's bytes may hold 0x1b by chance)
            data = path.read_text()
            assert "<img" not in data and "\x1b" not in data


@pytest.mark.parametrize("which", ["profile", "analysis"])
def test_terminal_and_show_show_them_as_text(which: str, hostile: dict[str, Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    record = load_record(hostile[which])
    text = TerminalRenderer().render(record)
    assert "\x1b" not in text
    assert main(["show", str(hostile[which])]) == 0
    shown = capsys.readouterr().out
    assert shown == text and "\x1b" not in shown
    if which == "profile":
        assert LABEL in shown or "<img src=x" in shown
    else:
        assert "\\x1b" in shown
