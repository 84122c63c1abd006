"""A one-trace analysis drawn in two parts (``render/kinds/analyze.TwoPartDrawing``): the
head from the report the analysis hands over early (``on_head``), the rest from the
record, is the view drawn whole, byte for byte, on every example trace; a head that no
longer holds is drawn anew, never shown stale."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from attnprof.analysis.analyze import analyze_files
from attnprof.record.trace_report import TraceReport
from attnprof.render.kinds.analyze import TwoPartDrawing
from attnprof.render.terminal import TerminalRenderer
from attnprof.render.trace_report import REST_FIELDS, head_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "traces"
TRACES = sorted(p.name for p in EXAMPLES.glob("*.json.gz"))


def _analysed(trace: str) -> tuple[bytes, object]:
    """The report as the analysis hands it over early (encoded there and then, as the
    child sends it), and the finished record."""
    heads: list[bytes] = []
    record = analyze_files([str(EXAMPLES / trace)],
                           on_head=lambda report: heads.append(msgspec.msgpack.encode(report)))
    assert len(heads) == 1
    return heads[0], record


@pytest.mark.parametrize("color", [False, True], ids=["plain", "colour"])
@pytest.mark.parametrize("trace", TRACES)
def test_head_then_rest_is_the_whole_view(trace: str, color: bool) -> None:
    early, record = _analysed(trace)
    renderer = TerminalRenderer(width=120, color=color, top=5)
    drawing = TwoPartDrawing(renderer)
    drawing.head(msgspec.msgpack.decode(early, type=TraceReport))
    early_report = msgspec.msgpack.decode(early, type=TraceReport)
    # What the analysis adds after the head is only what the rest draws.
    assert head_of(early_report) == head_of(record.reports[0])
    assert early_report.findings == [] and early_report.timeline is None
    assert drawing.text(record) == renderer.render(record)


def test_a_head_that_no_longer_holds_is_drawn_anew() -> None:
    early, record = _analysed("v100_training_large.json.gz")
    renderer = TerminalRenderer(width=160)
    drawing = TwoPartDrawing(renderer)
    stale = msgspec.msgpack.decode(early, type=TraceReport)
    stale.regions[0].name = "a region the record no longer has"
    drawing.head(stale)
    text = drawing.text(record)
    assert text == renderer.render(record)
    assert "a region the record no longer has" not in text


def test_the_head_is_taken_when_drawn_not_when_compared() -> None:
    """A report changed after its head was drawn (in one process, the same object) is
    caught: the head's bytes were taken at the time."""
    _, record = _analysed("cpu_only.json.gz")
    report = record.reports[0]
    renderer = TerminalRenderer(width=160)
    drawing = TwoPartDrawing(renderer)
    drawing.head(report)
    report.events += 1  # what the header shows
    assert drawing.text(record) == renderer.render(record)
    assert f"{report.events} events" in drawing.text(record)


def test_without_a_head_it_is_the_whole_view() -> None:
    _, record = _analysed("cpu_only.json.gz")
    renderer = TerminalRenderer(width=160)
    assert TwoPartDrawing(renderer).text(record) == renderer.render(record)


def test_rest_fields_are_fields_of_a_report() -> None:
    fields = {f.name for f in msgspec.structs.fields(TraceReport)}
    assert set(REST_FIELDS) <= fields
