"""One rule per event, whatever batch it falls in (issue 21 item 8).

Before: ``"Bytes": 2**63`` gave "peak memory 8589934592.0 GiB" when its batch typed, 3.5 MiB
when an unrelated bad field sat in the same 1 MiB batch; invalid UTF-8 in an event was
refused or silently dropped depending on its batch; entries that are not events and a second
``traceEvents`` list went unsaid. Now each odd event is read by one rule on every path (the C
scanner, msgspec's typed structs, msgspec's loose re-reading): the same row, or the same
counted drop or unusable value with its reason, or the same error.

Each case puts the same odd event among ordinary ones, alone in its batch or beside another
odd one (a wrong-typed value, an entry that is not an object) in the same batch, and loads
each file with and without the C scanner: every load of a file must give the same trace, and
the odd event's own row and counts must not change with its neighbour.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from attnprof.analysis.analyze import analyze_trace
from attnprof.errors import UsageError
from attnprof.render.trace_report import render_trace_report
from attnprof.trace import Trace, load_trace
from attnprof.trace.table import ROW_COLUMNS

PURE = "ATTNPROF_PURE_PYTHON_LOADER"


def _x(ts: int, name: str = "aten::mm", **extra: Any) -> str:
    event = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 4,
             **extra}
    return json.dumps(event)


def _memory(ts: int, **args: Any) -> str:
    return json.dumps({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
                       "tid": 1, "ts": ts, "s": "t",
                       "args": {"Addr": 4096, "Device Type": 0, "Device Id": -1, **args}})


# (id, the odd event's JSON text, what it adds: meta field -> {reason: count}).
ODD: list[tuple[str, str, dict[str, dict[str, int]]]] = [
    ("bytes-2**63", _memory(20, Bytes=2**63), {"unusable_values": {"args.Bytes": 1}}),
    ("bytes-2**63-1", _memory(20, Bytes=2**63 - 1), {"unusable_values": {"args.Bytes": 1}}),
    ("bytes-2**53", _memory(20, Bytes=2**53), {"unusable_values": {"args.Bytes": 1}}),
    ("bytes-just-below-2**53", _memory(20, Bytes=2**53 - 1), {}),
    ("bytes-beyond-uint64", _memory(20, Bytes=10**30), {"unusable_values": {"args.Bytes": 1}}),
    ("bytes-and-copy-bytes", _memory(20, Bytes=2**60, bytes=64),
     {"unusable_values": {"args.Bytes": 1}}),
    ("total-allocated-huge", _memory(20, Bytes=8, **{"Total Allocated": -(2**62)}),
     {"unusable_values": {"args.Total Allocated": 1}}),
    ("copy-bytes-huge", _x(20, args={"bytes": 2**55, "device": 0}),
     {"unusable_values": {"args.bytes": 1}}),
    ("addr-beyond-int64", _memory(20, Bytes=8, Addr=2**64),
     {"unusable_values": {"args.Addr": 1}}),
    ("correlation-text", _x(20, args={"correlation": "abc"}),
     {"unusable_values": {"args.correlation": 1}}),
    ("correlation-beyond-int64", _x(20, args={"correlation": 2**63}),
     {"unusable_values": {"args.correlation": 1}}),
    ("pid-beyond-int64", _x(20, pid=2**64 + 5), {"unusable_values": {"pid": 1}}),
    ("pid-4e12", _x(20, pid=4_000_000_000_000), {}),
    ("grid-entry-beyond-int64", _x(20, args={"grid": [1, 2**70, 3], "block": [32, 1, 1]}),
     {"unusable_values": {"args.grid": 1}}),
    ("sort-index-beyond-int64",
     json.dumps({"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index":
                                                                              2**64}}),
     {"unusable_values": {"args.sort_index": 1}}),
    ("flow-id-beyond-int64",
     json.dumps({"ph": "s", "id": 2**63, "pid": 1, "tid": 1, "ts": 20, "cat": "ac2g"}),
     {"unusable_values": {"id": 1}}),
    ("name-a-number", _x(20).replace('"aten::mm"', "7"), {"unusable_values": {"name": 1}}),
    ("args-a-list", _x(20, args=[1, 2]), {"unusable_values": {"args": 1}}),
    ("dur-text", _x(20).replace('"dur": 4', '"dur": "long"'),
     {"skipped_events": {"dur not a number": 1}}),
    ("ts-beyond-float", _x(20).replace('"ts": 20', '"ts": 1e999'),
     {"skipped_events": {"ts not a number": 1}}),
    # Numbers beyond float range, which msgspec cannot hold even untyped: the value is
    # unusable, the event stays (it was dropped whole, as "not an object").
    ("pid-beyond-float", _x(20).replace('"pid": 1', '"pid": 1e999'),
     {"unusable_values": {"pid": 1}}),
    ("correlation-beyond-float", _x(20, args={"correlation": 1}).replace(
        '"correlation": 1', '"correlation": -1e999'),
     {"unusable_values": {"args.correlation": 1}}),
    ("args-beyond-float", _x(20, args=1).replace('"args": 1', '"args": 1e999'),
     {"unusable_values": {"args": 1}}),
    ("name-beyond-float-and-dur-too", _x(20).replace('"aten::mm"', "1e400").replace(
        '"dur": 4', '"dur": 1e400'),
     {"unusable_values": {"name": 1}, "skipped_events": {"dur not a number": 1}}),
    ("ph-beyond-float", _x(20).replace('"ph": "X"', '"ph": 1e999'),
     {"dropped_entries": {"no phase (ph)": 1}}),
    ("a-number", "17", {"dropped_entries": {"not an object": 1}}),
    ("a-list", "[1, {}]", {"dropped_entries": {"not an object": 1}}),
    ("null", "null", {"dropped_entries": {"not an object": 1}}),
    ("empty-object", "{}", {"dropped_entries": {"no phase (ph)": 1}}),
    ("phase-a-number", _x(20).replace('"ph": "X"', '"ph": 5'),
     {"dropped_entries": {"no phase (ph)": 1}}),
    ("unicode-name", _x(20, name="café \u202e"), {}),
]
# Odd neighbours put in the odd event's batch, and what each adds.
NEIGHBOURS: dict[str, tuple[str | None, dict[str, dict[str, int]]]] = {
    "alone": (None, {}),
    "wrong-type": (_x(21, name="neighbour").replace('"dur": 4', '"dur": "bad"'),
                   {"skipped_events": {"dur not a number": 1}}),
    "not-an-object": ('"not an event"', {"dropped_entries": {"not an object": 1}}),
}


def _file(tmp_path: Path, odd: str, neighbour: str | None, name: str) -> Path:
    """Ordinary events, the odd one, its neighbour right after it, ordinary events."""
    events = [_x(ts) for ts in range(0, 20, 2)] + [odd]
    events += [neighbour] if neighbour else []
    events += [_x(ts) for ts in range(30, 60, 2)] + [_memory(40, Bytes=1000),
                                                     _memory(41, Bytes=-1000)]
    path = tmp_path / name
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + "\n]}")
    return path


def _load_every_way(path: Path, monkeypatch: pytest.MonkeyPatch) -> Trace | str:
    """The trace (or the error) loaded with and without the C scanner, each with the odd
    event in a batch of its own (64-byte chunks) and in one batch with everything (4 MiB):
    all four must agree."""
    results: list[Trace | str] = []
    for pure in (False, True):
        if pure:
            monkeypatch.setenv(PURE, "1")
        else:
            monkeypatch.delenv(PURE, raising=False)
        for chunk in (64, 4 << 20):
            try:
                results.append(load_trace(path, chunk_bytes=chunk))
            except UsageError as e:
                results.append(str(e))
    monkeypatch.delenv(PURE, raising=False)
    first = results[0]
    for other in results[1:]:
        if isinstance(first, str) or isinstance(other, str):
            assert first == other
        else:
            _same(first, other)
    return first


def _rows(trace: Trace) -> list[tuple[Any, ...]]:
    """Every row as plain values, with its memory bytes (nan as None), in file order."""
    t = trace.events
    columns = [getattr(t, c).tolist() for c in ROW_COLUMNS if c not in ("memory", "launch")]
    names = [t.strings[i] if i >= 0 else None for i in t.name.tolist()]
    nbytes = [None if b != b else b for b in t.bytes.tolist()]
    return [(*(None if v != v else v for v in row), n, b)
            for row, n, b in zip(zip(*columns, strict=True), names, nbytes, strict=True)]


def _same(a: Trace, b: Trace) -> None:
    assert _rows(a) == _rows(b)
    assert a.meta == b.meta


def _counts(trace: Trace) -> dict[str, dict[str, int]]:
    return {field: dict(getattr(trace.meta, field)) for field in
            ("unusable_values", "dropped_entries", "skipped_events")}


def _plus(*parts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = {f: {} for f in
                                        ("unusable_values", "dropped_entries", "skipped_events")}
    for part in parts:
        for field, counts in part.items():
            for why, n in counts.items():
                total[field][why] = total[field].get(why, 0) + n
    return total


@pytest.mark.parametrize("neighbour", sorted(NEIGHBOURS))
@pytest.mark.parametrize(("case", "odd", "adds"), ODD, ids=[c for c, _, _ in ODD])
def test_an_odd_event_reads_alike_in_any_batch(
        case: str, odd: str, adds: dict[str, dict[str, int]], neighbour: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    near, near_adds = NEIGHBOURS[neighbour]
    alone = _load_every_way(_file(tmp_path, odd, None, "alone.json"), monkeypatch)
    beside = _load_every_way(_file(tmp_path, odd, near, "beside.json"), monkeypatch)
    assert isinstance(alone, Trace) and isinstance(beside, Trace)
    assert _counts(alone) == _plus(adds)
    assert _counts(beside) == _plus(adds, near_adds)
    rows = _rows(beside)
    if near is not None and near.startswith("{"):
        rows = [r for r in rows if r[-2] != "neighbour"]  # its own row, by its name
    assert rows == _rows(alone)
    # Peak memory is one allocation of 1000 B whatever the odd event's bytes (none count).
    t = alone.events
    assert float(np.nanmax(np.abs(t.memory_records.bytes))) < 2**53
    report = analyze_trace(alone)
    console = Console(file=io.StringIO(), width=200)
    render_trace_report(report, console, top=5)
    said = console.file.getvalue()  # type: ignore[attr-defined]
    for counts in adds.values():
        for why in counts:
            assert why in said, said  # the report says what was left out, and why


@pytest.mark.parametrize("neighbour", sorted(NEIGHBOURS))
@pytest.mark.parametrize("where", ["name", "cat", "args.name", "args-list", "beside-1e999"])
def test_text_that_is_not_utf8_is_refused_in_any_batch(
        where: str, neighbour: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Invalid UTF-8 in a value attnprof reads makes the file unreadable (JSON is UTF-8),
    with the byte named, whether its batch typed or was re-read event by event."""
    odd = {"name": _x(20, name="BAD"), "cat": _x(20).replace('"cpu_op"', '"BAD"'),
           "args.name": _x(20, args={"name": "BAD"}), "args-list": _x(20, args=["BAD"]),
           "beside-1e999": _x(20, name="BAD").replace('"pid": 1', '"pid": 1e999')}[where]
    near = NEIGHBOURS[neighbour][0]
    messages = set()
    for name, neighbours in (("alone.json", None), ("beside.json", near)):
        path = _file(tmp_path, odd, neighbours, name)
        path.write_bytes(path.read_bytes().replace(b"BAD", b"caf\xe9"))
        said = _load_every_way(path, monkeypatch)
        assert isinstance(said, str) and "not UTF-8" in said
        messages.add(said.replace(name, "T"))
        assert f"near byte {path.read_bytes().index(b'caf') + 3}" in said
    assert len(messages) == 1


def test_invalid_utf8_in_a_value_not_read_is_no_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key attnprof never reads ("Call stack") is skipped unread on every path."""
    path = _file(tmp_path, _x(20, note="BAD"), NEIGHBOURS["wrong-type"][0], "t.json")
    path.write_bytes(path.read_bytes().replace(b"BAD", b"caf\xe9"))
    trace = _load_every_way(path, monkeypatch)
    assert isinstance(trace, Trace) and len(trace.events) == 29  # the odd one and its neighbour too


def test_a_second_trace_events_list_is_counted_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + _x(1) + "], " + '"traceName": "t", "traceEvents": ['
                    + ",".join([_x(5)] * 7) + '], "displayTimeUnit": "ns"}')
    trace = _load_every_way(path, monkeypatch)
    assert isinstance(trace, Trace)
    assert len(trace.events) == 1 and trace.meta.trace_name == "t"
    assert trace.meta.display_time_unit == "ns"
    assert trace.meta.dropped_entries == {"in a second traceEvents list": 7}
    assert trace.meta.n_dropped == 7
