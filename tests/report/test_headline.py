"""The answer first, wherever a record is read (issue 33, acceptance 2): for compare,
profile, analyze, model, sweep, diff and capture records, the HTML page's first text after
its title is the headline (headless Chromium), the Markdown summary holds the headline and
a table, ``_repr_html_`` is HTML with a ``<table>`` and no script, and ``repr()`` is one
screen (under 2,000 characters) naming the kind, the run and the headline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import torch
import torch.nn.functional as F
from chromium import open_page
from torch import nn

import attnprof
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.compare import CompareRecord, rows_headline
from attnprof.render import HtmlRenderer, MarkdownRenderer, write_rendered
from attnprof.render.markdown import markdown_escape
from attnprof.render.safe import terminal_safe

KINDS = ("compare", "profile", "analyze", "model", "sweep", "diff", "capture")


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).view(1, 8, 3, 2, 8).unbind(2)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).flatten(2)


@pytest.fixture(scope="module")
def records(records_by_kind: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """The shared records, and a capture of a real loop (an ``analyze`` record whose
    report carries the ``capture`` block)."""
    model = _Block()
    x = torch.randn(1, 8, 16)
    out = tmp_path_factory.mktemp("capture")
    with attnprof.capture(model, out=out, store=False, active=2) as cap:
        for _ in range(4):
            model(x).sum().backward()
            cap.step()
    assert isinstance(cap.record, AnalyzeRecord)
    assert "capture" in (cap.record.reports[0].attnprof or {})
    return {**{k: records_by_kind[k] for k in KINDS if k != "capture"},
            "capture": cap.record}


@pytest.mark.parametrize("kind", KINDS)
def test_markdown_repr_and_notebook_lead_with_the_headline(kind: str,
                                                          records: dict[str, Any]) -> None:
    record = records[kind]
    headline = record.headline()
    assert headline and headline == record.summary()
    markdown = MarkdownRenderer().render(record)
    assert len(markdown.encode()) < 64 * 1024
    shown = terminal_safe(record).headline()
    assert f"**{markdown_escape(shown, None)}**" in markdown
    assert "\n|---|" in markdown  # a GitHub table: header, then its delimiter row
    body = record._repr_html_()
    assert "<table" in body and "<script" not in body and "<style" not in body
    assert "http://" not in body and "https://" not in body  # nothing to fetch
    assert 'class="headline"' in body
    text = repr(record)
    assert len(text) < 2000
    assert record.kind in text and record.run_id in text and headline[:60] in text
    if kind == "capture":
        assert headline.startswith("Captured from your own loop")


@pytest.mark.parametrize("kind", KINDS)
def test_the_page_opens_with_the_headline(kind: str, records: dict[str, Any],
                                          tmp_path: Path) -> None:
    record = records[kind]
    path = tmp_path / f"{kind}.html"
    write_rendered(HtmlRenderer(), record, path)
    view = open_page(path)
    assert view.console_errors == [] and view.requests == []
    lines = [line.strip() for line in view.text.splitlines() if line.strip()]
    assert lines[1] == terminal_safe(record).headline(), lines[:3]  # right after the title


def test_compare_names_ties_as_ties(records_by_kind: dict[str, Any]) -> None:
    """A row whose median is within the noise of the fastest's ties with it: both are
    named, neither is called the fastest alone (attnprof.noise.differ decides)."""
    record = records_by_kind["compare"]
    assert isinstance(record, CompareRecord)
    ok = sorted((r for r in record.results if r.status == "ok" and r.latency_ms),
                key=lambda r: r.latency_ms.median)  # type: ignore[union-attr]
    best, slowest = ok[0], ok[-1]
    twin = msgspec.structs.replace(best, variant="twin")
    headline = rows_headline([best, twin, slowest])
    assert headline.startswith(f"{best.variant} and twin tie for fastest (within noise)")
    assert f"faster than {slowest.variant}" in headline
    assert rows_headline([best, twin]).startswith("All 2 measured variants tie")
