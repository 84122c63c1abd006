"""Bad input: a clear one-line UsageError for what cannot be a trace, degraded rows otherwise.

The property tests feed the loader mangled events, random bytes and real captures cut at
random offsets: it must load or raise UsageError, never anything else, and whatever loads
must not depend on the chunk size.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import ARG_KEYS  # the argument keys torch.profiler writes, shared with the fuzzer

from attnprof.errors import UsageError
from attnprof.trace import Trace, load_trace

EVENT = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5}


def write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def usage_error(path: Path, **kw: Any) -> str:
    with pytest.raises(UsageError) as info:
        load_trace(path, **kw)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


# ---- files that are not traces --------------------------------------------------------
def test_missing_file(tmp_path: Path) -> None:
    assert "not found" in usage_error(tmp_path / "nope.json")


def test_directory(tmp_path: Path) -> None:
    assert "directory" in usage_error(tmp_path)


@pytest.mark.parametrize(
    "content", [b"", b"  \n\t ", gzip.compress(b"")], ids=["empty", "blank", "empty-gz"]
)
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    assert "empty" in usage_error(write(tmp_path / "t.json", content))


def test_truncated_and_corrupted_gzip(tmp_path: Path) -> None:
    packed = gzip.compress(json.dumps({"traceEvents": [EVENT] * 2000}).encode())
    assert "gzip" in usage_error(write(tmp_path / "cut.json.gz", packed[: len(packed) // 2]))
    broken = bytearray(packed)
    broken[len(broken) // 2 : len(broken) // 2 + 16] = b"\xff" * 16
    assert "gzip" in usage_error(write(tmp_path / "bad.json.gz", bytes(broken)))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"a": 1}', "not a Chrome trace"),
        ("[1, 2, 3]", "no trace events"),
        ('[{"a": 1}, {"b": 2}]', "no trace events"),
        ('{"traceEvents": 5}', "not a list"),
        ('"a string"', "not a Chrome trace"),
        ("42", "not a Chrome trace"),
        ("null", "not a Chrome trace"),
        ('{"traceEvents": [{"ph": "X", "ts": 1}', "truncated"),
        ('{"traceEvents": [{"ph": "X", "ts": 1}]', "not closed"),
        ('{"traceEvents": [{"ph": "X",, "ts": 1}]}', "invalid JSON"),
        ('{"traceEvents": [{"ph": "X"}], "traceName": }', "not valid trace JSON"),
        ('[{"ph": "X"}] trailing', "after the event list"),
        ('{"schemaVersion": 1, "a": [1, 2', "not valid trace JSON"),
    ],
)
def test_not_a_trace(tmp_path: Path, text: str, says: str) -> None:
    assert says in usage_error(write(tmp_path / "t.json", text))


@pytest.mark.parametrize("events", [
    b'[{"ph": "X", "name": "\xff\xfe", "ts": 3, "dur": 1}]',  # the last event
    b'[{"ph": "X", "name": "\xc3(", "ts": 3, "dur": 1}, {"ph": "X", "ts": 4, "dur": 1}]',
])
def test_text_that_is_not_utf8_is_named(tmp_path: Path, events: bytes) -> None:
    """An invalid UTF-8 byte in a name the analysis reads is named as such, with where it
    is, not taken for a truncated file (msgspec's error names no byte)."""
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": ' + events + b"}")
    said = usage_error(path)
    assert "not UTF-8" in said and f"near byte {path.read_bytes().index(b'name') + 8}" in said


def test_truncated_capture(tmp_path: Path, cpu_capture: Path) -> None:
    text = cpu_capture.read_bytes()
    path = write(tmp_path / "cut.json", text[: int(len(text) * 0.6)])
    assert "truncated" in usage_error(path)
    assert "truncated" in usage_error(path, chunk_bytes=1024)


def test_bad_chunk_size(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="chunk_bytes"):
        load_trace(write(tmp_path / "t.json", "[]"), chunk_bytes=0)


# ---- traces with odd parts load, the odd parts degrade ----------------------------------
def test_wrong_types_degrade_to_absent_values(tmp_path: Path) -> None:
    odd = {
        "ph": "X", "name": "odd", "ts": "late", "dur": 1, "pid": "p", "tid": [1], "id": 1.5,
        "args": {"correlation": "x", "grid": [1, "a"], "block": [2], "Bytes": "many",
                 "External id": 10**30, "stream": "0x1f", "Input Dims": [[1, 2]]},
    }  # fmt: skip
    doc = {"traceEvents": [odd, EVENT, 5, {"no": "phase"}], "distributedInfo": {"rank": "zero"}}
    trace = load_trace(write(tmp_path / "t.json", json.dumps(doc)))
    t = trace.events
    assert len(t) == 2 and trace.meta.n_dropped == 2
    assert t.names() == ["odd", "aten::mm"]
    assert np.isnan(t.ts[0]) and t.ts[1] == 0.0 and t.dur.tolist() == [1.0, 5.0]
    assert trace.meta.id_labels[int(t.pid[0])] == "p" and t.tid[0] == -1
    assert t.correlation[0] == -1 and t.external_id[0] == -1 and t.flow_id[0] == -1
    assert t.stream[0] == 31
    assert t.grid[0].tolist() == [1, -1, -1] and t.block[0].tolist() == [2, -1, -1]
    assert np.isnan(t.bytes[0])
    assert t.strings[int(t.input_dims[0])] == "[[1, 2]]"
    assert trace.meta.distributed is not None and trace.meta.distributed.rank is None


def test_bare_list_forms(tmp_path: Path) -> None:
    # Chrome's array format may omit the closing bracket, with or without a last comma.
    for text in (
        f"[{json.dumps(EVENT)}]",
        f"[{json.dumps(EVENT)},\n",
        f"\ufeff[{json.dumps(EVENT)}",
    ):
        assert len(load_trace(write(tmp_path / "t.json", text)).events) == 1
    assert len(load_trace(write(tmp_path / "e.json", "[]")).events) == 0
    assert len(load_trace(write(tmp_path / "o.json", '{"traceEvents": []}')).events) == 0


def test_header_and_trailer_keys_anywhere(tmp_path: Path) -> None:
    doc = (
        '{"traceName": "a \\"traceEvents\\": [ trap", "deviceProperties": [{"id": 0}, 3],'
        ' "traceEvents": [' + json.dumps(EVENT) + '], "displayTimeUnit": "ns",'
        ' "baseTimeNanoseconds": 1700000000000000000, "schemaVersion": 1}'
    )
    meta = load_trace(write(tmp_path / "t.json", doc)).meta
    assert meta.trace_name == 'a "traceEvents": [ trap'
    assert meta.device_properties == ({"id": 0},)
    assert (meta.display_time_unit, meta.base_time_ns, meta.schema_version) == (
        "ns",
        1700000000000000000,
        1,
    )


def test_events_larger_than_the_chunk_and_tricky_cuts(tmp_path: Path) -> None:
    events = [
        {**EVENT, "name": "x" * 20000 + "}, {"},
        {**EVENT, "args": {"nested": {"a": 1}, "list": [{"b": 2}, {"c": "},"}], "correlation": 7}},
        {**EVENT, "name": 'quote " and }, inside'},
    ] * 20
    path = write(tmp_path / "t.json", json.dumps({"traceEvents": events}, indent=1))
    whole = load_trace(path).events
    assert len(whole) == 60 and whole.correlation[1] == 7
    for chunk in (1, 7, 512, 4096):
        t = load_trace(path, chunk_bytes=chunk).events
        assert t.names() == whole.names() and np.array_equal(t.correlation, whole.correlation)


# ---- properties ------------------------------------------------------------------------
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([2**53 - 1, 2**53, 2**63 - 1, 2**63, -(2**63) - 1, 2**64]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
TOP_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "args", "s"]
plausible = {
    "ph": st.sampled_from(["X", "i", "s", "f", "M", "", "XX"]),
    "ts": st.one_of(
        st.integers(0, 2**60), st.floats(0, 2e15), st.decimals(0, 2e15, places=3).map(float)
    ),
    "pid": st.one_of(st.integers(-5, 2**40), st.sampled_from(["Spans", "", "12"])),
}
args_strategy = st.dictionaries(st.sampled_from(ARG_KEYS), json_values, max_size=6)
event_strategy = st.dictionaries(
    st.sampled_from(TOP_KEYS),
    json_values,
    max_size=8,
).flatmap(
    lambda base: st.fixed_dictionaries(
        {k: v for k, v in plausible.items() if k not in base},
        optional={"args": args_strategy},
    ).map(lambda extra: {**extra, **base})
)


def load_or_usage_error(path: Path, chunk: int) -> Trace | None:
    try:
        return load_trace(path, chunk_bytes=chunk)
    except UsageError:
        return None


def same(a: Trace | None, b: Trace | None) -> bool:
    """The same rows (memory figures included) and the same counts of what was left out:
    an event's reading may not depend on the batch it falls in (issue 21 item 8)."""
    if a is None or b is None:
        return a is b
    floats = ("ts", "dur", "bytes", "total_allocated")
    counts = ("n_dropped", "dropped_entries", "unusable_values", "skipped_events")
    return len(a.events) == len(b.events) and all(
        np.array_equal(getattr(a.events, c), getattr(b.events, c), equal_nan=c in floats)
        for c in ("ph", "cat", "name", "pid", "tid", "ts", "dur", "correlation", "launch",
                  "memory", "bytes", "total_allocated", "addr")
    ) and all(getattr(a.meta, c) == getattr(b.meta, c) for c in counts)


_quick = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_quick
@given(events=st.lists(event_strategy, max_size=12), chunk=st.sampled_from([1, 64, 300, 1 << 20]))
def test_random_events_load_or_raise_usage_error(
    tmp_path: Path, events: list[dict[str, Any]], chunk: int
) -> None:
    path = write(tmp_path / "t.json", json.dumps({"traceEvents": events}))
    assert same(load_or_usage_error(path, chunk), load_or_usage_error(path, 1 << 30))


@_quick
@given(data=st.binary(max_size=200), gz=st.booleans())
def test_random_bytes_load_or_raise_usage_error(tmp_path: Path, data: bytes, gz: bool) -> None:
    load_or_usage_error(write(tmp_path / "t.json", gzip.compress(data) if gz else data), 64)


@_quick
@given(cut=st.floats(0, 1), chunk=st.sampled_from([97, 4096, 1 << 20]), gz=st.booleans())
def test_truncated_capture_loads_or_raises_usage_error(
    tmp_path: Path, cpu_capture: Path, cut: float, chunk: int, gz: bool
) -> None:
    text = cpu_capture.read_bytes()
    if gz:
        packed = gzip.compress(text)
        data = packed[: int(len(packed) * cut)]
    else:
        data = text[: int(len(text) * cut)]
    loaded = load_or_usage_error(write(tmp_path / "t.json", data), chunk)
    # Only the whole file is a whole trace (a cut can land in the trailing whitespace).
    assert loaded is None or len(data) >= len(text.rstrip()) or (gz and cut == 1)
