"""The JSON around ``traceEvents``, walked as a stream (issue 21 item 9).

Before: a valid trace with more than 64 MiB before ``"traceEvents"`` (a 119 MB
``stackFrames`` block) was called "not a Chrome trace". Now the key is found wherever it
is, in bounded memory; values attnprof does not read are checked and skipped (decoded by
msgspec up to ``_CHECKED_BYTES``, followed by their structure beyond); a second
``traceEvents`` list is counted, not read.
"""

from __future__ import annotations

import gzip
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnprof.errors import UsageError
from attnprof.trace import envelope, load_trace

EVENTS = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i,
           "dur": 1} for i in range(5)]
PROPS = [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 42}]


def _trace(tmp_path: Path, before: dict[str, Any], after: dict[str, Any] | None = None,
           name: str = "t.json") -> Path:
    doc = {**before, "traceEvents": EVENTS, **(after or {})}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_more_than_64_mib_before_the_events(tmp_path: Path) -> None:
    """66 MiB of stack frames first (the old cap was 64 MiB): read in a fresh process, whose
    peak memory shows the block was never held whole."""
    path = tmp_path / "big.json"
    frame = '"%d": {"category": "python", "name": "torch/nn/modules/module.py(1501): f", ' \
            '"parent": %d}'
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "stackFrames": {')
        f.write(",".join(frame % (i, i - 1) for i in range(800_000)))
        f.write('}, "deviceProperties": ' + json.dumps(PROPS) + ', "traceEvents": '
                + json.dumps(EVENTS) + ', "traceName": "big"}')
    assert path.stat().st_size > 66 << 20
    code = ("from attnprof.trace import load_trace; "
            f"t = load_trace({str(path)!r}); "
            "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]; "
            "print(len(t.events), t.meta.schema_version, t.meta.trace_name, "
            "t.meta.device_properties[0]['name'], peak.split()[1])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    n, version, name, device, peak_kib = done.stdout.split(maxsplit=4)
    assert (n, version, name) == ("5", "1", "big") and device.startswith("NVIDIA")
    # Peak resident memory (this process's own: VmHWM, reset by exec) stays near what the
    # interpreter and numpy take, far from the block's size or its decoded objects.
    assert int(peak_kib.split()[-1]) < 200 << 10


@pytest.fixture
def structure_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every value attnprof does not read followed by its structure, never held (as values
    over 16 MiB are), so small inputs exercise that path."""
    monkeypatch.setattr(envelope, "_CHECKED_BYTES", 0)


# JSON values with what makes structure hard to follow: brackets and quotes in strings,
# escapes (a backslash before a quote, runs of backslashes), non-ASCII text, nesting.
_TEXT = st.text(alphabet=st.sampled_from([*'ab[]{},:"\\/é\n\t ', "\u2028", "\x00"]),
                max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False,
                                                                        allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=25)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_VALUES, chunk=st.sampled_from([1, 3, 7, 64, 4 << 20]),
       extra=st.lists(_VALUES, max_size=6))
def test_skipped_values_end_where_json_says(
        tmp_path: Path, structure_only: None, value: Any, chunk: int, extra: list[Any]) -> None:
    """Whatever a skipped value holds and wherever the text is cut into reads, the walk ends
    it where a JSON parser does: the keys after it are found, the events read, and a second
    event list's entries counted exactly."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"stackFrames": value, "schemaVersion": 3, "odd": [value],
                                "traceEvents": EVENTS})[:-1]
                    + ', "traceName": "x", "traceEvents": ' + json.dumps(extra) + ', "more": '
                    + json.dumps(value) + "}")
    trace = load_trace(path, chunk_bytes=chunk)
    assert len(trace.events) == len(EVENTS) and trace.meta.schema_version == 3
    assert trace.meta.trace_name == "x"
    dropped = trace.meta.dropped_entries
    assert dropped == ({"in a second traceEvents list": len(extra)} if extra else {})


def test_kept_keys_anywhere_and_escaped_keys(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"odd": {"traceEvents": [1]}, "note": "\\"traceEvents\\": [", '
                    '"device\\u0050roperties": ' + json.dumps(PROPS) + ', '
                    '"trace\\u0045vents": ' + json.dumps(EVENTS) + "}")
    trace = load_trace(path)
    assert len(trace.events) == 5 and trace.meta.device_properties[0]["id"] == 0


@pytest.mark.parametrize("checked", [True, False], ids=["held", "structure"])
@pytest.mark.parametrize(("text", "says"), [
    ('{"stackFrames": {"a": "unfinished', "truncated"),
    ('{"stackFrames": {"a": 1}], "traceEvents": []}', "expected ',' or '}'"),
    ('{"stackFrames": [1, 2, "traceEvents": []}', "truncated"),
    ('{"stackFrames": [1, 2]', "truncated"),
    ('{"stackFrames" [1], "traceEvents": []}', "expected ':'"),
    ('{7: 1, "traceEvents": []}', "expected a key"),
    ('{"traceEvents": [], "traceName": "t"} extra', "data after the object"),
    ('{"traceEvents": [], "traceEvents": [1, 2}', "truncated"),
])
def test_broken_json_around_the_events_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: bool, text: str,
        says: str) -> None:
    if not checked:
        monkeypatch.setattr(envelope, "_CHECKED_BYTES", 0)
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(UsageError) as info:
        load_trace(path, chunk_bytes=5)
    message = str(info.value)
    assert "not valid trace JSON" in message and says in message and "\n" not in message


def test_a_checked_value_with_bad_json_inside_is_refused(tmp_path: Path) -> None:
    """Within _CHECKED_BYTES the whole grammar is checked, as a JSON parser would."""
    path = tmp_path / "t.json"
    path.write_text('{"stackFrames": {"a" 1}, "traceEvents": []}')
    with pytest.raises(UsageError, match="invalid JSON"):
        load_trace(path)


def test_a_gzip_trace_with_a_large_header(tmp_path: Path) -> None:
    block = {str(i): {"name": "a\\\"b[" * 3, "parent": i} for i in range(20_000)}
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"stackFrames": block, "traceEvents": EVENTS,
                                               "traceName": "gz"}).encode()))
    trace = load_trace(path, chunk_bytes=4096)
    assert len(trace.events) == 5 and trace.meta.trace_name == "gz"


def test_memory_stays_bounded_on_a_long_string(tmp_path: Path) -> None:
    """A 40 MB string in the header is streamed through, not held."""
    path = tmp_path / "t.json"
    with open(path, "w") as f:
        f.write('{"stackFrames": "' + "ab\\\\c" * 8_000_000 + '", "traceEvents": '
                + json.dumps(EVENTS) + "}")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    trace = load_trace(path)
    assert len(trace.events) == 5
    # (ru_maxrss only grows: a bound on the growth is what can be said in-process.)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 << 10
