"""The loader's C fast path (``attnprof.trace._scan``) against msgspec: the same trace, always.

Every input is loaded twice, once as shipped and once with ``ATTNPROF_PURE_PYTHON_LOADER=1``,
and must give the same table (every column's values and dtype, strings, launch and memory
side tables, meta) or the same error message. Counting which path read each batch keeps the
comparisons honest: a fast path that silently declined everything would pass them all, so the
tests also say which inputs it must read (the public traces, the accepted edge cases) and
which it must leave to msgspec (each reason it declines a batch for).
"""

from __future__ import annotations

import dataclasses
import gzip
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutations import Source, mutant

from attnprof.errors import UsageError
from attnprof.trace import Trace, load_trace, scan
from attnprof.trace.builder import TableBuilder

PURE = "ATTNPROF_PURE_PYTHON_LOADER"
HAS_SCANNER = scan._scan is not None
needs_scanner = pytest.mark.skipif(not HAS_SCANNER, reason="attnprof.trace._scan is not built")


# ---- loading both ways ----------------------------------------------------------------
class _CountingScanner:
    """Passes everything to the real scanner, counting the batches it reads and declines."""

    def __init__(self, inner: Any, counts: Counter[str]) -> None:
        self._inner, self._counts = inner, counts

    @property
    def tokens(self) -> list[bytes]:
        return self._inner.tokens  # type: ignore[no-any-return]

    def scan(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        found = self._inner.scan(data, *args, **kwargs)
        self._counts["scanned" if found is not None else "declined"] += 1
        return found


@dataclasses.dataclass
class Loaded:
    """One input loaded both ways: the trace (or the error as ``"Type: message"``) and how
    many batches each path fed on the fast run (``fast``: the scanner's columns, ``msgspec``:
    decoded structs; ``scanned``/``declined``: scanner calls, wrong cuts included)."""

    result: Trace | str
    counts: Counter[str]

    @property
    def trace(self) -> Trace:
        assert isinstance(self.result, Trace), self.result
        return self.result


@pytest.fixture
def load_both(monkeypatch: pytest.MonkeyPatch, assert_same_trace: Any) -> Callable[..., Loaded]:
    """``load_both(path, **load_trace_kwargs)``: load with and without the fast path, assert
    the same trace or the same error, and return it with the fast run's batch counts."""
    counts: Counter[str] = Counter()
    add, add_records, new_scanner = TableBuilder.add, TableBuilder.add_records, scan.new_scanner

    def counted_add(self: TableBuilder, *a: Any, **k: Any) -> None:
        counts["msgspec"] += 1
        add(self, *a, **k)

    def counted_add_records(self: TableBuilder, *a: Any, **k: Any) -> None:
        counts["fast"] += 1
        add_records(self, *a, **k)

    def counted_scanner() -> Any:
        inner = new_scanner()
        return None if inner is None else _CountingScanner(inner, counts)

    monkeypatch.setattr(TableBuilder, "add", counted_add)
    monkeypatch.setattr(TableBuilder, "add_records", counted_add_records)
    monkeypatch.setattr(scan, "new_scanner", counted_scanner)

    def load(path: Path, **kw: Any) -> Loaded:
        runs = []
        for pure in (False, True):
            if pure:
                monkeypatch.setenv(PURE, "1")
            else:
                monkeypatch.delenv(PURE, raising=False)
            counts.clear()
            try:
                result: Trace | str = load_trace(path, **kw)
            except Exception as e:  # compared below: both paths must fail alike
                result = f"{type(e).__name__}: {e}"
            runs.append((result, Counter(counts)))
        monkeypatch.delenv(PURE, raising=False)
        (fast, fast_counts), (pure_result, pure_counts) = runs
        # The opt-out really opts out: no scanner, every batch through msgspec.
        assert pure_counts["fast"] == pure_counts["scanned"] == pure_counts["declined"] == 0
        if isinstance(fast, Trace) and isinstance(pure_result, Trace):
            assert_same_trace(fast, pure_result)
        else:
            assert fast == pure_result
        return Loaded(fast, fast_counts)

    return load


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _trace_text(events: list[str], bare: bool = False) -> str:
    body = ",\n".join(events)
    if bare:
        return f"[{body}]"
    return f'{{"schemaVersion": 1, "traceEvents": [\n{body}\n], "traceName": "t"}}'


# ---- a: the public traces -------------------------------------------------------------
# Traces whose batches go to msgspec by design, so no share of fast batches is asked of them.
DECLINED_BY_DESIGN = {
    "mi250_rocm_minitoy.json.gz": 'ROCm runtime events write "stream": "0x0"',
    "triton_example.json.gz": 'Inductor writes "grid": "grid(100,)"; 13 events in all',
}


def _assert_mostly_fast(name: str, counts: Counter[str]) -> None:
    batches = counts["fast"] + counts["msgspec"]
    assert counts["scanned"] >= counts["fast"]  # a fed batch was scanned once at least
    if HAS_SCANNER and batches >= 10 and name not in DECLINED_BY_DESIGN:
        # Only the batches with metadata ("M") events, a few per trace, need msgspec.
        assert counts["fast"] >= 0.8 * batches, dict(counts)


def test_public_trace_same_both_ways(
    public_traces: Path, public_name: str, load_both: Callable[..., Loaded]
) -> None:
    loaded = load_both(public_traces / public_name)
    assert len(loaded.trace.events) > 0
    _assert_mostly_fast(public_name, loaded.counts)


def test_public_trace_same_both_ways_in_small_chunks(
    public_traces: Path, scan_chunk: tuple[str, int], load_both: Callable[..., Loaded]
) -> None:
    """Small chunks cut even the small traces into many batches, most without metadata
    events, some read fast and some by msgspec in one table."""
    name, chunk = scan_chunk
    loaded = load_both(public_traces / name, chunk_bytes=chunk)
    _assert_mostly_fast(name, loaded.counts)


@needs_scanner
@pytest.mark.parametrize("value", ["", "0"])
def test_pure_python_env_off_values_keep_the_fast_path(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PURE, value)
    assert scan.new_scanner() is not None
    monkeypatch.setenv(PURE, "1")
    assert scan.new_scanner() is None


# ---- b: hand-written edge cases -------------------------------------------------------
# A CPU op with shapes, its kernel with a launch configuration, an allocation, a copy and the
# flow arrow between op and kernel: every column and side table has values.
BASE = [
    '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5,'
    ' "args": {"External id": 3, "Sequence number": 7, "Input Dims": [[2, 3], [3, 4]],'
    ' "Input type": ["float", "float"], "Ev Idx": 0}}',
    '{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 12, "dur": 3,'
    ' "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 11,'
    ' "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5,'
    ' "warps per SM": 2, "grid": [4, 1, 1], "block": [128, 1, 1],'
    ' "est. achieved occupancy %": 12, "External id": 3}}',
    '{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2,'
    ' "ts": 11, "s": "t", "args": {"Total Reserved": 4096, "Total Allocated": 2048,'
    ' "Bytes": 1024, "Addr": 94823427, "Device Type": 1, "Device Id": 0}}',
    '{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,'
    ' "tid": 7, "ts": 14, "dur": 1, "args": {"device": 0, "context": 1, "stream": 7,'
    ' "correlation": 12, "bytes": 4096, "memory bandwidth (GB/s)": 1.5}}',
    '{"ph": "s", "id": 11, "pid": 1, "tid": 2, "ts": 10, "cat": "ac2g", "name": "launch"}',
    '{"ph": "f", "id": 11, "pid": 0, "tid": 7, "ts": 12, "cat": "ac2g", "name": "launch",'
    ' "bp": "e"}',
]


def _x(body: str = "", args: str | None = None, ts: str = "20") -> str:
    """A complete event with ``body`` spliced in (and an args object when given)."""
    fields = ['"ph": "X"', '"cat": "cpu_op"', '"name": "op"', '"pid": 1', '"tid": 2']
    fields += [f'"ts": {ts}', '"dur": 1'] if ts else []
    fields += [body] if body else []
    fields += [f'"args": {args}'] if args is not None else []
    return "{" + ", ".join(fields) + "}"


def _deep(depth: int, opening: str = "[", closing: str = "]") -> str:
    return opening * depth + "1" + closing * depth


# (id, events after BASE). The scanner leaves each of these batches to msgspec.
DECLINED: list[tuple[str, list[str]]] = [
    ("metadata-name-number", [
        '{"ph": "M", "name": "process_name", "pid": 7, "args": {"name": 5}}']),
    ("metadata-labels-list", [
        '{"ph": "M", "name": "process_labels", "pid": 7, "args": {"labels": ["CPU"]}}']),
    ("metadata-sort-index-float", [
        '{"ph": "M", "name": "thread_sort_index", "pid": 7, "tid": 1,'
        ' "args": {"sort_index": 1.5}}']),
    ("string-flow-id", ['{"ph": "s", "id": "0x1f", "pid": 1, "tid": 2, "ts": 10}']),
    ("string-stream", [_x(args='{"stream": "0x0", "correlation": 4}')]),
    ("u-escape-name", [_x().replace('"name": "op"', r'"name": "caf\u00e9"')]),
    ("u-escape-ascii", [_x().replace('"name": "op"', r'"name": "\u0041"')]),
    ("u-escape-surrogates", [_x().replace('"name": "op"', r'"name": "\ud83d\ude00"')]),
    ("u-escape-key", [_x(r'"n\u0061me": "other"')]),
    ("u-escape-in-args", [_x(args=r'{"Input Dims": ["\u00e9"]}')]),
    ("u-escape-unknown-key", [_x(r'"note": "\u00e9"')]),
    ("non-ascii-name", [_x().replace('"name": "op"', '"name": "café"')]),
    ("non-ascii-cat", [_x().replace('"cat": "cpu_op"', '"cat": "ядро"')]),
    ("non-ascii-input-type", [_x(args='{"Input type": ["é"]}')]),
    ("non-ascii-unknown", [_x('"note": "naïve"')]),
    ("int-19-digits-correlation", [_x(args='{"correlation": 1234567890123456789}')]),
    ("int-19-digits-ts", [_x(ts="1712195495519689047")]),
    ("int-19-digits-dur", [_x().replace('"dur": 1', '"dur": 1000000000000000000')]),
    ("int-beyond-int64-addr", [_x(args='{"Addr": 18446744073709551616, "Bytes": 8}')]),
    ("int-beyond-int64-pid", [_x().replace('"pid": 1', '"pid": 99999999999999999999')]),
    ("int-19-digits-unknown", [_x('"big": 1000000000000000000')]),
    # Byte counts from 2**53 on are not exact in float64: absent, and counted, on both paths.
    ("bytes-at-2-53", [_x(args='{"Addr": 1, "Bytes": 9007199254740992}')]),
    ("bytes-18-digits", [_x(args='{"Addr": 1, "Bytes": 999999999999999999, "Device Id": 3}')]),
    ("bytes-negative-2-53", [_x(args='{"Addr": 1, "Bytes": -9007199254740992}')]),
    ("copy-bytes-beyond-2-53", [_x(args='{"bytes": 9007199254740993, "device": 0}')]),
    ("total-allocated-beyond-2-53", [
        _x(args='{"Addr": 2, "Bytes": 8, "Total Allocated": 9007199254740995}')]),
    ("grid-two", [_x(args='{"grid": [1, 2], "block": [32, 1, 1]}')]),
    ("grid-four", [_x(args='{"grid": [1, 2, 3, 4], "block": [32, 1, 1]}')]),
    ("grid-float", [_x(args='{"grid": [1, 2.0, 3], "block": [32, 1, 1]}')]),
    ("grid-string", [_x(args='{"grid": "grid(100,)", "block": [32, 1, 1]}')]),
    ("grid-empty", [_x(args='{"grid": [], "block": [32, 1, 1]}')]),
    ("grid-null-entry", [_x(args='{"grid": [1, null, 3], "block": [32, 1, 1]}')]),
    ("block-two", [_x(args='{"grid": [1, 1, 1], "block": [128, 1]}')]),
    ("block-nested", [_x(args='{"grid": [1, 1, 1], "block": [[1], 1, 1]}')]),
    ("neg-zero-blocks-per-sm", [_x(args='{"block": [1, 1, 1], "blocks per SM": -0.0}')]),
    ("neg-zero-warps-per-sm", [_x(args='{"block": [1, 1, 1], "warps per SM": -0e0}')]),
    ("neg-zero-occupancy", [_x(args='{"block": [1, 1, 1], "est. achieved occupancy %": -0.0}')]),
    ("neg-underflow-occupancy", [_x(args='{"block": [1, 1, 1], "blocks per SM": -1e-400}')]),
    ("deep-args", [_x(args='{"deep": ' + _deep(70) + "}")]),
    ("deep-args-objects", [_x(args='{"deep": ' + _deep(70, '{"a": ', "}") + "}")]),
    ("deep-event", [_x('"deep": ' + _deep(100))]),
    ("deep-input-dims", [_x(args='{"Input Dims": ' + _deep(80) + "}")]),
    ("very-deep", [_x('"deep": ' + _deep(5000))]),
    ("duplicate-name", [_x('"name": "again"')]),
    ("duplicate-ph", [_x('"ph": "i"')]),
    ("duplicate-ts", [_x('"ts": 99')]),
    ("duplicate-args", [_x('"args": {"correlation": 1}', args='{"correlation": 2}')]),
    ("duplicate-correlation", [_x(args='{"correlation": 1, "correlation": 2}')]),
    ("duplicate-input-dims", [_x(args='{"Input Dims": [[1]], "Input Dims": [[2]]}')]),
    ("duplicate-block", [_x(args='{"block": [1, 1, 1], "block": [2, 1, 1]}')]),
    ("duplicate-bytes", [_x(args='{"Addr": 5, "Bytes": 1, "Bytes": 2}')]),
    ("null-ts", [_x(ts="null")]),
    ("null-dur", [_x().replace('"dur": 1', '"dur": null')]),
    ("null-pid", [_x().replace('"pid": 1', '"pid": null')]),
    ("null-name", [_x().replace('"name": "op"', '"name": null')]),
    ("null-cat", [_x().replace('"cat": "cpu_op"', '"cat": null')]),
    ("null-ph", [_x().replace('"ph": "X"', '"ph": null')]),
    ("null-args", [_x(args="null")]),
    ("null-correlation", [_x(args='{"correlation": null}')]),
    ("null-addr", [_x(args='{"Addr": null, "Bytes": 8}')]),
    ("null-blocks-per-sm", [_x(args='{"block": [1, 1, 1], "blocks per SM": null}')]),
    ("null-flow-id", ['{"ph": "f", "id": null, "pid": 1, "tid": 2, "ts": 10, "bp": "e"}']),
    ("null-bp", ['{"ph": "f", "id": 3, "pid": 1, "tid": 2, "ts": 10, "bp": null}']),
    ("float-correlation", [_x(args='{"correlation": 1.0}')]),
    ("exponent-correlation", [_x(args='{"correlation": 1e2}')]),
    ("string-ts", [_x(ts='"5"')]),
    ("bool-dur", [_x().replace('"dur": 1', '"dur": true')]),
    ("ts-beyond-float", [_x(ts="1e999")]),
    ("dur-beyond-float", [_x().replace('"dur": 1', '"dur": -1e999')]),
    ("long-phase", [_x().replace('"ph": "X"', '"ph": "XX"')]),
    ("empty-phase", [_x().replace('"ph": "X"', '"ph": ""')]),
    ("escaped-phase", [_x().replace('"ph": "X"', r'"ph": "\/"')]),
    ("no-phase", ['{"name": "no phase", "ts": 3, "pid": 1, "tid": 2}']),
    ("empty-object", ["{}"]),
    ("args-list", [_x(args="[]")]),
    ("args-number", [_x(args="5")]),
    ("not-objects", ["5", '"event"', "null", "[1, 2]", "true"]),
]

# (id, events after BASE). The scanner reads each of these batches itself.
ACCEPTED: list[tuple[str, list[str]]] = [
    ("metadata", [
        '{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "python"}}',
        '{"ph": "M", "name": "process_labels", "pid": 7, "args": {"labels": "CPU"}}',
        '{"ph": "M", "name": "process_sort_index", "pid": 7, "args": {"sort_index": 3}}',
        '{"ph": "M", "name": "thread_name", "pid": 7, "tid": 9, "args": {"name": "main"}}',
        '{"ph": "M", "name": "thread_sort_index", "pid": 7, "tid": 9,'
        ' "args": {"sort_index": 1}}',
        '{"ph": "M", "name": "process_name", "pid": "Spans", "tid": "PyTorch Profiler",'
        ' "args": {"name": "spans"}}',
    ]),
    ("string-pid", [_x().replace('"pid": 1', '"pid": "Spans"')]),
    ("digit-string-pid", [_x().replace('"pid": 1', '"pid": "12"')]),
    ("string-tid", [_x().replace('"tid": 2', '"tid": "stream 7 "')]),
    ("metadata-empty-and-null", [
        '{"ph": "M", "name": "process_name", "pid": 8, "args": {"name": ""}}',
        '{"ph": "M", "name": "thread_name", "pid": 8, "tid": 3, "args": {"name": null}}',
        '{"ph": "M", "name": "process_sort_index", "pid": 8, "args": {"sort_index": null}}',
        '{"ph": "M", "name": "thread_sort_index", "pid": 8, "tid": 3, "args": {}}',
        '{"ph": "M", "name": "process_labels", "pid": 8}',
        '{"ph": "M", "name": "unknown_meta", "pid": 8, "args": {"name": "x", "sort_index": 2}}',
    ]),
    ("metadata-only", [
        '{"ph": "M", "name": "process_name", "pid": 9, "ts": 0.5, "args": {"name": "p"}}']),
    ("int-dur", [_x().replace('"dur": 1', '"dur": 5')]),
    ("float-ts", [_x(ts="20.5"), _x(ts="21.125")]),
    ("mixed-int-float-ts", [_x(ts="20"), _x(ts="20.25"), _x(ts="21"), _x(ts="19.999")]),
    ("absent-ts-and-dur", [
        _x(ts=""), '{"ph": "X", "name": "no dur", "pid": 1, "tid": 2, "ts": 30}',
        '{"ph": "i", "name": "no ts", "pid": 1, "tid": 2}', _x(ts="").replace(
            '"name": "op"', '"name": "neither"'), _x().replace('"dur": 1', '"dur": -2'),
    ]),
    ("empty-args", [_x(args="{}"), _x(args=" { } ")]),
    ("null-byte-counts", [
        _x(args='{"Addr": 7, "Bytes": null, "Total Allocated": null, "Device Type": 0}'),
        _x(args='{"bytes": null, "device": 0}'),
        _x(args='{"Bytes": null, "bytes": 64, "Total Allocated": 4}'),
        _x(args='{"Addr": 9, "Bytes": 5, "bytes": 6}'),
    ]),
    ("null-grid-block", [
        _x(args='{"grid": null, "block": [32, 1, 1]}'),
        _x(args='{"grid": [2, 2, 2], "block": null}'),
        _x(args='{"grid": null, "block": null, "correlation": 5}'),
    ]),
    ("escapes-in-names", [
        _x().replace('"name": "op"', r'"name": "say \"hi\""'),
        _x().replace('"name": "op"', r'"name": "back\\slash"'),
        _x().replace('"name": "op"', r'"name": "two\nlines"'),
        _x().replace('"name": "op"', r'"name": "tab\tbed"'),
        _x().replace('"name": "op"', r'"name": "\b\f\r\/"'),
        _x().replace('"cat": "cpu_op"', r'"cat": "c\\at"'),
    ]),
    ("empty-strings", [
        _x().replace('"name": "op"', '"name": ""'),
        _x().replace('"cat": "cpu_op"', '"cat": ""'),
        _x(args='{"Input type": "", "Input Dims": ""}'),
    ]),
    ("input-dims-whitespace", [
        _x(args='{"Input Dims": [[1, 2], [ 3 ,4 ]], "Input type": ["float",  "int"]}'),
        _x(args='{"Input Dims": [[1,2],[3,4]], "Input type": ["float","int"]}'),
        _x(args='{"Input Dims":\t[[1, 2], [3, 4]]\n, "Input type" : ["float", "int"] }'),
        _x(args='{"Input Dims": [], "Input type": "float"}'),
        _x(args='{"Input Dims": null, "Input type": {"a": [true, false, null]}}'),
        _x(args=r'{"Input Dims": ["a\"b", "c\\d"], "Input type": 1.5e3}'),
        _x().replace('"name": "op"', '"name": "float"'),
        _x().replace('"name": "op"', '"name": "\\"float\\""'),
    ]),
    ("plain-and-escaped-same-name", [
        _x().replace('"name": "op"', '"name": "a/b"'),
        _x().replace('"name": "op"', r'"name": "a\/b"'),
        _x().replace('"cat": "cpu_op"', r'"cat": "a\/b"'),
        _x().replace('"name": "op"', r'"name": "a\/b\/"'),
    ]),
    ("memory-events", [
        '{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 2,'
        ' "ts": 21, "args": {"Total Reserved": 8192, "Total Allocated": 1024, "Bytes": -1024,'
        ' "Addr": 94823427, "Device Type": 1, "Device Id": 3}}',
        '{"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 22, "args": {"Bytes": 16,'
        ' "Addr": 140000000000000, "Device Type": 0, "Device Id": -1}}',
        '{"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 23, "args": {"Bytes":'
        ' 9007199254740991, "Addr": 1, "Device Type": 1, "Device Id": 300, "device": 2}}',
        '{"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 24, "args": {"Bytes":'
        ' -9007199254740991, "Total Allocated": 9007199254740991, "Addr": 2, "Device Id": 1}}',
        '{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7,'
        ' "ts": 25, "dur": 1, "args": {"device": 0, "stream": 7, "bytes": 0}}',
    ]),
    ("launch-configs", [
        _x(args='{"grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32,'
                ' "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2,'
                ' "est. achieved occupancy %": 12}'),  # the kernel's again
        _x(args='{"grid": [4,1,1], "block": [128,1,1], "registers per thread": 32,'
                ' "shared memory": 0, "blocks per SM": 5e-1, "warps per SM": 2.0,'
                ' "est. achieved occupancy %": 12.0}'),  # the same, written otherwise
        _x(args='{"grid": [4, 1, 1], "block": [128, 1, 1]}'),  # no occupancy figures
        _x(args='{"grid": [4, 1, 1], "block": [128, 1, 1]}'),
        _x(args='{"block": [64, 2, 1], "blocks per SM": 0, "warps per SM": -0}'),
        _x(args='{"grid": [-1, 0, 999999999999999999], "block": [1, 1, 1],'
                ' "registers per thread": 255, "shared memory": 49152,'
                ' "blocks per SM": 5e-324, "warps per SM": 1e-400, '
                '"est. achieved occupancy %": 1e308}'),
        _x(args='{"grid": [ 2 , 2 , 2 ], "block": [\n1,\t1,\r\n1 ]}'),
        _x(args='{"grid": [2, 2, 2], "block": [1, 1, 1], "blocks per SM": 0.1,'
                ' "warps per SM": 0.30000000000000004}'),
        _x(args='{"grid": [2, 2, 2], "block": [1, 1, 1], "blocks per SM": 0.1,'
                ' "warps per SM": 0.3}'),
    ]),
    ("epoch-float-ts", [
        _x(ts="1712195495519689.047"), _x(ts="1712195495519690.5"),
        _x(ts="1712195495519689.0469999"), _x(ts="1712195495519688.999"),
    ]),
    ("epoch-int-ts", [_x(ts="1712195495519689"), _x(ts="1712195495519699")]),
    ("epoch-mixed-ts", [
        _x(ts="1712195495519689"), _x(ts="1712195495519689.047"), _x(ts="1712195495519690"),
    ]),
    ("ts-between-2e40-and-2e43", [
        _x(ts="2199023255552.123"), _x(ts="2199023255553"), _x(ts="1099511627776.0005"),
    ]),
    ("epoch-18-digit-int-ts", [_x(ts="123456789012345678"), _x(ts="123456789012345679.5")]),
    ("negative-and-zero-ts", [_x(ts="-5"), _x(ts="-0.0"), _x(ts="0"), _x(ts="-1.75")]),
    ("number-forms", [
        _x(ts="2e1").replace('"dur": 1', '"dur": 1E-2'),
        _x(ts="2.5E+1").replace('"dur": 1', '"dur": 5e-324'),
        _x().replace('"dur": 1', '"dur": 1e-400'),
        _x().replace('"dur": 1', '"dur": -0.0'),
        _x().replace('"dur": 1', '"dur": -0'),
        _x().replace('"dur": 1', '"dur": 9007199254740993.0000000000000001'),
        _x().replace('"dur": 1', '"dur": 999999999999999999'),
        _x(args='{"correlation": -999999999999999999, "External id": 0, "device": -0}'),
    ]),
    ("flows", [
        '{"ph": "s", "id": 5, "pid": 1, "tid": 2, "ts": 10, "bp": ""}',
        '{"ph": "f", "id": 999999999999999999, "pid": 1, "tid": 2, "ts": 11, "bp": "e"}',
        '{"ph": "t", "id": -3, "pid": 1, "tid": 2, "ts": 12}',
    ]),
    ("other-phases", [
        '{"ph": "C", "name": "counter", "pid": 1, "tid": 2, "ts": 3, "args": {"value": 3}}',
        '{"ph": "b", "name": "async", "pid": 1, "tid": 2, "ts": 3, "id": 1}',
        '{"ph": " ", "name": "blank phase", "pid": 1, "tid": 2, "ts": 3}',
        '{"ph": "~", "name": "tilde phase", "pid": 1, "tid": 2, "ts": 3}',
    ]),
    ("whitespace", [
        '{\n\t"ph"\t:\t"X" ,\r\n "name" :"ws",\n"pid":1,"tid":2,"ts":\n3,"dur":1,\n'
        '"args" : { "correlation" : 4 , "Input Dims" : [ [ 1 ] ] }\n}',
    ]),
    ("unknown-keys-and-values", [
        _x('"s": "t", "extra": {"a": [1, {"b": null}], "c": true, "d": false}, "e": []'),
        _x(args='{"name": "not metadata", "labels": "x", "sort_index": 3, "Call stack": '
                '"a;b", "Fwd thread id": 0, "flops": 1.5e9, "nested": [[[[[1]]]]]}'),
        _x('"deep": ' + _deep(60)),
        _x(args='{"deep": ' + _deep(60) + "}"),
    ]),
    ("odd-ascii", [
        _x().replace('"name": "op"', '"name": "del\x7f and ~ and spaces  "'),
        _x().replace('"name": "op"', '"name": "' + "x" * 5000 + '"'),
    ]),
    ("duplicate-unknown-keys", [_x('"extra": 1, "extra": 2', args='{"flops": 1, "flops": 2}')]),
    ("large-ids", [
        _x(args='{"correlation": 2147483648, "External id": 32768, "Sequence number": 128,'
                ' "stream": 300, "device": 127}'),
        _x().replace('"pid": 1', '"pid": 4294967296').replace('"tid": 2', '"tid": -129'),
    ]),
]


def _fast_batch(events: list[str]) -> bool:
    """Whether a fresh scanner reads ``[events]`` as one batch."""
    scanner = scan.new_scanner()
    assert scanner is not None
    return scanner.scan(("[" + ",".join(events) + "]").encode()) is not None


@pytest.mark.parametrize(("case", "events"), DECLINED, ids=[c for c, _ in DECLINED])
def test_declined_batches_same_both_ways(
    tmp_path: Path, load_both: Callable[..., Loaded], case: str, events: list[str]
) -> None:
    loaded = load_both(_write(tmp_path / "t.json", _trace_text([*BASE, *events])))
    if isinstance(loaded.result, Trace):
        assert loaded.counts["fast"] == 0 and loaded.counts["msgspec"] >= 1, dict(loaded.counts)
    if HAS_SCANNER:
        assert _fast_batch(BASE)  # the events around the case are not what it declines
        assert not _fast_batch([*BASE, *events])


@pytest.mark.parametrize(("case", "events"), ACCEPTED, ids=[c for c, _ in ACCEPTED])
@pytest.mark.parametrize("bare", [False, True], ids=["object", "bare-list"])
def test_accepted_batches_same_both_ways(
    tmp_path: Path, load_both: Callable[..., Loaded], case: str, events: list[str], bare: bool
) -> None:
    loaded = load_both(_write(tmp_path / "t.json", _trace_text([*BASE, *events], bare)))
    rows = [e for e in events if '"ph": "M"' not in e]  # metadata goes to TraceMeta
    assert len(loaded.trace.events) == len(BASE) + len(rows)
    if HAS_SCANNER:
        assert loaded.counts["fast"] == 1 and loaded.counts["msgspec"] == 0, dict(loaded.counts)
        assert _fast_batch([*BASE, *events])


def test_skipped_events_counted_alike(tmp_path: Path, load_both: Callable[..., Loaded]) -> None:
    events = dict(ACCEPTED)["absent-ts-and-dur"]
    meta = load_both(_write(tmp_path / "t.json", _trace_text([*BASE, *events]))).trace.meta
    assert meta.skipped_events == {"missing ts": 3, "missing dur": 1, "negative dur": 1}


def test_names_decoded_once_whatever_their_spelling(
    tmp_path: Path, load_both: Callable[..., Loaded]
) -> None:
    events = dict(ACCEPTED)["plain-and-escaped-same-name"]
    t = load_both(_write(tmp_path / "t.json", _trace_text([*BASE, *events]))).trace.events
    n, text = len(BASE), t.strings.__getitem__
    assert text(t.name[n]) == text(t.name[n + 1]) == text(t.cat[n + 2]) == "a/b"
    assert text(t.name[n + 3]) == "a/b/" and t.strings.values.count("a/b") == 1


def test_launch_configs_shared_and_distinct(
    tmp_path: Path, load_both: Callable[..., Loaded]
) -> None:
    events = dict(ACCEPTED)["launch-configs"]
    t = load_both(_write(tmp_path / "t.json", _trace_text([*BASE, *events]))).trace.events
    rows, n = t.launch.tolist(), len(BASE)
    kernel = rows[1]
    assert rows[n] == rows[n + 1] == kernel  # the kernel's configuration, written twice
    assert rows[n + 2] == rows[n + 3] != kernel  # the same grid and block, no figures
    others = rows[n + 4 : n + 9]
    assert len(set(others)) == 5 and not set(others) & {kernel, rows[n + 2]}
    assert len(t.launches.grid) == 7 and rows[0] == -1


def test_every_row_column_has_values(tmp_path: Path, load_both: Callable[..., Loaded]) -> None:
    """The accepted cases together fill every column and side table (so the comparisons
    above compare something), read by the scanner in one table."""
    events = [e for _, case in ACCEPTED for e in case]
    loaded = load_both(_write(tmp_path / "t.json", _trace_text([*BASE, *events])))
    t = loaded.trace.events
    for column in ("correlation", "external_id", "flow_id", "device", "stream",
                   "sequence_number", "input_dims", "input_types", "launch", "memory"):
        assert (getattr(t, column) >= 0).sum() >= 2, column
    assert set(t.flow_bp.tolist()) == {b"", b"e"}
    assert len(t.launches.grid) >= 5 and len(t.memory_records.bytes) >= 10
    assert loaded.trace.meta.skipped_events
    if HAS_SCANNER:
        assert loaded.counts["fast"] == 1 and loaded.counts["msgspec"] == 0


TRAILERS = {
    "closed-at-once": "]}",
    "kineto-log-lines": '],\n  "INFO": ["cpp:976] Enabling", "x]", "[y]"],\n  "traceName": '
                        '"/tmp/t].json",\n  "displayTimeUnit": "ms"\n}',
    "objects": '], "distributedInfo": {"rank": 0, "pg": {"a": []}}, "traceName": "t"}',
}
# After the events, a list of objects looks like their end: the guess is wrong, and the
# events are found where they end all the same.
MISLEADING = '], "deviceProperties": [{"id": 0}, {"id": 1}], "traceName": "t"}'


@pytest.mark.parametrize("trailer", [*TRAILERS, "misleading", "no-events"])
def test_last_batch_read_once(
    tmp_path: Path, load_both: Callable[..., Loaded], monkeypatch: pytest.MonkeyPatch,
    trailer: str,
) -> None:
    """The events that end the text, before the trailer, are read once: not first tried
    together with the trailer (a scan and a full msgspec decode, both bound to fail at the
    trailer) and then again without it."""
    import attnprof.trace.loader as loader

    strict, decodes = loader._strict, []

    class CountingDecoder:
        def decode(self, data: bytes) -> Any:
            decodes.append(len(data))
            return strict.decode(data)

    monkeypatch.setattr(loader, "_strict", CountingDecoder())
    events = [] if trailer == "no-events" else BASE
    text = TRAILERS.get(trailer, MISLEADING if trailer == "misleading" else "]}")
    body = '{"schemaVersion": 1, "traceEvents": [\n' + ",\n".join(events) + "\n" + text
    loaded = load_both(_write(tmp_path / "t.json", body))  # the same trace both ways
    assert len(loaded.trace.events) == len(events)
    if trailer in TRAILERS:
        # One msgspec decode in all: the pure run's (the fast run has the scanner's one
        # scan). Both used to try the events with the trailer first: 3 decodes, 2 scans.
        assert len(decodes) == 1, decodes
        if HAS_SCANNER:
            assert dict(loaded.counts) == {"scanned": 1, "fast": 1}


@pytest.mark.parametrize("chunk", [700, 1 << 20])
def test_without_side_tables_the_rest_is_the_same(
    tmp_path: Path, load_both: Callable[..., Loaded], assert_same_array: Any, chunk: int
) -> None:
    """``side_tables=False``: no launch configurations and memory records (their columns
    absent, their tables empty, and the meta says so), every other column and value as a
    full load has them; the same both ways, in one batch or many."""
    import msgspec

    from attnprof.trace.table import ROW_COLUMNS

    events = [e for _, case in ACCEPTED for e in case]
    path = _write(tmp_path / "t.json", _trace_text([*BASE, *events]))
    full = load_trace(path, chunk_bytes=chunk)
    bare = load_both(path, chunk_bytes=chunk, side_tables=False).trace
    assert (full.events.launch >= 0).sum() >= 5 and (full.events.memory >= 0).sum() >= 10
    for column in ROW_COLUMNS:
        if column in ("launch", "memory"):
            assert (getattr(bare.events, column) == -1).all(), column
        else:
            assert_same_array(getattr(bare.events, column), getattr(full.events, column),
                              column)
    assert bare.events.strings == full.events.strings
    assert len(bare.events.launches.grid) == len(bare.events.memory_records.bytes) == 0
    assert bare.meta == msgspec.structs.replace(full.meta, side_tables=False)
    assert full.meta.side_tables


def test_mixed_batches_same_both_ways(tmp_path: Path, load_both: Callable[..., Loaded]) -> None:
    """Accepted and declined cases in one file cut into small batches: strings, launch ids,
    memory rows and the ts origin carry across batches read by either path."""
    events = [e for _, case in ACCEPTED for e in case]
    odd = [e for cid, case in DECLINED if "deep" not in cid for e in case]
    mixed = [*BASE]
    for i, e in enumerate(events * 3):
        mixed.append(e)
        if i % 40 == 0:
            mixed.append(odd[i // 40 % len(odd)])
    path = _write(tmp_path / "t.json", _trace_text(mixed))
    for chunk in (700, 2048, 1 << 20):
        counts = load_both(path, chunk_bytes=chunk).counts
        if HAS_SCANNER and chunk < 1 << 20:
            assert counts["fast"] >= 3 and counts["msgspec"] >= 3, (chunk, dict(counts))


def test_many_small_events_same_both_ways(
    tmp_path: Path, load_both: Callable[..., Loaded]
) -> None:
    """More events in a batch than the scanner's reusable output holds (~34k), then fewer."""
    rng = random.Random(0)
    events = []
    for i in range(80_000):
        k = rng.random()
        if k < 0.8:
            events.append(f'{{"ph":"i","ts":{i}}}')
        elif k < 0.95:
            events.append(f'{{"ph":"X","ts":{i}.5,"dur":1,"name":"k{rng.randrange(40)}",'
                          f'"args":{{"grid":[1,1,1],"block":[{rng.randrange(64)},1,1]}}}}')
        else:
            events.append(f'{{"ph":"i","ts":{i},"args":{{"Addr":{rng.randrange(1 << 40)},'
                          f'"Bytes":{rng.randrange(-99, 99)},"Device Id":0}}}}')
    path = _write(tmp_path / "t.json", '{"traceEvents":[' + ",".join(events) + "]}")
    for chunk in (1 << 20, 3 << 20):
        loaded = load_both(path, chunk_bytes=chunk)
        assert len(loaded.trace.events) == len(events)
        if HAS_SCANNER:
            assert loaded.counts["msgspec"] == 0


# ---- b: malformed input: the same error both ways --------------------------------------
_CLEAN = _trace_text(BASE)
MALFORMED: list[tuple[str, str]] = [
    ("truncated-mid-event", _CLEAN[: _CLEAN.index('"gemm"') + 3]),
    ("truncated-mid-string", _CLEAN[: _CLEAN.index("aten::mm") + 4]),
    ("truncated-after-comma", _CLEAN[: _CLEAN.index("},\n") + 2]),
    ("truncated-trailer", _CLEAN[:-6]),
    ("not-closed", _CLEAN[: _CLEAN.rindex("]")]),
    ("double-comma", _CLEAN.replace('"dur": 5,', '"dur": 5,,')),
    ("missing-colon", _CLEAN.replace('"dur": 5', '"dur" 5')),
    ("leading-zero", _CLEAN.replace('"dur": 5', '"dur": 05')),
    ("bare-dot", _CLEAN.replace('"dur": 5', '"dur": 5.')),
    ("nan-literal", _CLEAN.replace('"dur": 5', '"dur": NaN')),
    ("infinity-literal", _CLEAN.replace('"ts": 10', '"ts": -Infinity')),
    ("single-quotes", _CLEAN.replace('"ph": "X"', "'ph': 'X'", 1)),
    ("control-char-in-name", _CLEAN.replace("aten::mm", "aten\t::mm")),
    ("lone-surrogate", _CLEAN.replace("aten::mm", r"aten\udcff")),
    ("bad-escape", _CLEAN.replace("aten::mm", r"aten\x41")),
    ("trailing-comma-in-args", _CLEAN.replace('"Ev Idx": 0}', '"Ev Idx": 0,}')),
    ("trailing-garbage", _CLEAN + " trailing"),
    ("second-document", _CLEAN + _CLEAN),
    ("bare-trailing-garbage", _trace_text(BASE, bare=True) + " x"),
    ("bare-extra-bracket", _trace_text(BASE, bare=True) + "]"),
    ("bare-invalid", _trace_text(BASE, bare=True).replace('"tid": 2', '"tid": 2 2')),
    ("not-a-trace", '{"a": 1}'),
    ("no-events", "[1, 2, 3]"),
    ("no-event-objects", '[{"a": 1}, {"b": 2}]'),
    ("events-not-a-list", '{"traceEvents": 5}'),
    ("a-string", '"a string"'),
    ("empty", ""),
]


@pytest.mark.parametrize(("case", "text"), MALFORMED, ids=[c for c, _ in MALFORMED])
@pytest.mark.parametrize("packed", [False, True], ids=["json", "gz"])
def test_malformed_same_error_both_ways(
    tmp_path: Path, load_both: Callable[..., Loaded], case: str, text: str, packed: bool
) -> None:
    data = text.encode()
    path = _write(tmp_path / ("t.json.gz" if packed else "t.json"),
                  gzip.compress(data) if packed else data)
    result = load_both(path).result
    assert isinstance(result, str) and result.startswith(f"{UsageError.__name__}: "), result


@pytest.mark.parametrize(
    "damage",
    ["}{", '"ph": "X",, ', "\x00", '"name": "\\u00', "NaN, ", "]", "}]"],
    ids=["braces", "double-comma", "nul", "cut-escape", "nan", "bracket", "close"],
)
def test_malformed_after_fast_batches_same_error(
    tmp_path: Path, load_both: Callable[..., Loaded], damage: str
) -> None:
    """Damage two thirds into a long file: the scanner has read the batches before it."""
    events = [_x(ts=str(i)).replace('"name": "op"', f'"name": "op{i % 50}"')
              for i in range(3000)]
    text = _trace_text(events)
    at = text.index('{"ph"', len(text) * 2 // 3)
    loaded = load_both(_write(tmp_path / "t.json", text[:at] + damage + text[at:]),
                       chunk_bytes=4096)
    assert isinstance(loaded.result, str) and loaded.result.startswith("UsageError: ")
    if HAS_SCANNER:
        assert loaded.counts["fast"] >= 10, dict(loaded.counts)


# ---- c: the Scanner object -------------------------------------------------------------
def _rows(found: Any) -> int:
    """The number of events a scan read: (n, columns) from the C type, or the columns."""
    if isinstance(found, tuple):
        return int(found[0])
    return len(found["flags"])


@needs_scanner
@pytest.mark.parametrize("value", ["[]", None, 5, ["[]"]], ids=["str", "None", "int", "list"])
def test_scanner_takes_bytes_only(value: Any) -> None:
    scanner = scan.new_scanner()
    assert scanner is not None
    with pytest.raises(TypeError):
        scanner.scan(value)


@needs_scanner
def test_scanner_without_init_raises_instead_of_crashing() -> None:
    """``Scanner.__new__`` alone leaves no token list: reading it or scanning is an error
    (it dereferenced NULL before; found by fuzzing the extension under AddressSanitizer)."""
    raw = scan._scan.Scanner.__new__(scan._scan.Scanner)
    with pytest.raises(RuntimeError, match="__init__"):
        raw.tokens  # noqa: B018
    with pytest.raises(RuntimeError, match="__init__"):
        raw.scan(b"[]")


@needs_scanner
def test_scanner_output_has_no_stale_bytes() -> None:
    """Every byte scan() returns is written: the record's padding, which no column covers,
    comes back zeroed rather than as leftover heap memory (found under AddressSanitizer)."""
    raw = scan._scan.Scanner()
    raw.scan(b'[{"ph": "X", "name": "' + b"x" * 5000 + b'"}]')  # leave text in the heap
    n, columns = raw.scan(b"[" + b",".join([b'{"ph":"X","ts":1}'] * 4) + b"]")
    covered = max(offset for _, offset, _ in scan._scan.FIELDS) + 1  # "flags", one byte
    assert n == 4 and len(columns) == n * scan._scan.RECORD_SIZE
    assert bytes(columns[n * covered:]) == bytes(len(columns) - n * covered)


@needs_scanner
def test_scanner_reads_empty_and_declines_trailing_text() -> None:
    scanner = scan.new_scanner()
    assert scanner is not None
    for empty in (b"[]", b" [ ] ", b"\n[\t]\r\n"):
        assert _rows(scanner.scan(empty)) == 0
    one = b'[{"ph": "X", "ts": 1}]'
    assert _rows(scanner.scan(one)) == 1
    assert _rows(scanner.scan(b'[{"ph": "X"}, {"ph": "i", "ts": 2.5}]\n')) == 2
    for trailing in (b" x", b"]", b",", b"}", b" {}", b"\x00", b" 1"):
        assert scanner.scan(one + trailing) is None, trailing
    for broken in (b"", b"[", b"[{", b'[{"ph": "X"}', b'[{"ph": "X"},]', b"{}", b"[[]]",
                   b'[{"ph": "X"} {"ph": "X"}]', b'[{"ph": "X",}]', b"\xef\xbb\xbf[]"):
        assert scanner.scan(broken) is None, broken
    assert _rows(scanner.scan(one)) == 1  # a declined batch leaves the scanner usable


@needs_scanner
def test_scanner_tokens_grow_only_with_new_texts() -> None:
    scanner = scan.new_scanner()
    assert scanner is not None
    tokens = scanner.tokens
    assert tokens == []
    scanner.scan(b'[{"ph": "X", "cat": "k", "name": "a"}, {"ph": "X", "name": "a", "cat": ""}]')
    assert tokens == [b'"k"', b'"a"']  # JSON text, quotes and all; "" is no token
    scanner.scan(b'[{"ph": "X", "name": "k", "cat": "a"}]')
    assert tokens == [b'"k"', b'"a"']  # the same texts in other fields: the same tokens
    scanner.scan(b'[{"ph": "X", "name": "a\\/b", "args": {"Input Dims": [[1, 2], [3]],'
                 b' "Input type": "k"}}, {"ph": "X", "name": "a/b"}]')
    assert tokens[2:] == [b'"a\\/b"', b"[[1, 2], [3]]", b'"a/b"']
    scanner.scan(b'[{"ph": "X", "args": {"Input Dims": [[1, 2], [3]]}, "name": "a/b"}]')
    assert len(tokens) == 5
    assert scanner.tokens is tokens  # one list, grown in place: TokenIds keeps it
    assert len(set(tokens)) == len(tokens)


@needs_scanner
def test_tokens_of_declined_batches_stay_usable(
    tmp_path: Path, load_both: Callable[..., Loaded]
) -> None:
    """A batch declined after its first events were interned: those tokens are reused by a
    later batch the scanner reads, decoded as that batch means them."""
    first = ['{"ph": "X", "name": "shared", "cat": "c", "ts": 1, "dur": 1}',
             '{"ph": "i", "name": "c", "cat": "shared", "ts": 2, "args": {"stream": "0x0"}}']
    later = ['{"ph": "X", "name": "c", "cat": "shared", "ts": 2, "dur": 1,'
             ' "args": {"Input type": "shared"}}'] * 400
    loaded = load_both(_write(tmp_path / "t.json", _trace_text(first + later)),
                       chunk_bytes=1024)
    assert loaded.counts["fast"] >= 1 and loaded.counts["msgspec"] >= 1
    assert set(loaded.trace.events.strings.values) == {"shared", "c", '"shared"'}


# ---- a/b: seeded random traces ----------------------------------------------------------
_INTS = ["0", "-0", "1", "-1", "127", "128", "-129", "32768", "2147483648",
         "999999999999999999", "-999999999999999999"]
_FLOATS = ["0.0", "-0.0", "1.5", "-2.25", "1e3", "1E-2", "5e-324", "1e-400", "123456.789",
           "3", "-0", "0.30000000000000004", "1e308"]
_STRINGS = ['""', '"a"', '"a/b"', r'"a\/b"', r'"q\"x"', r'"b\\s"', r'"n\nl"', '"aten::mm"',
            '"kernel"', '"cpu_op"', '"[memory]"', '" sp "']
_BPS = ['"e"', '""']
_TRIPLES = ["[1, 2, 3]", "[1,1,1]", "[64, 1, 1]", "null", "[ 2 , 2 , 2 ]"]
_STAMPS = [["1", "5", "100"], ["1.5", "2.25", "100.125"], ["1", "2.5"],
           ["1712195495519689.047", "1712195495519690.5", "1712195495519689"],
           ["2199023255552.123", "1099511627776"], ["-0.0", "0", "3"]]
# What the scanner declines, sprinkled in at a low rate.
_ODD = ['"\\u00e9"', '"é"', "null", '"7"', "1234567890123456789", "[1, 2]", "-0.0", "1.0"]


def _random_trace(rng: random.Random) -> str:
    odd_rate = rng.choice([0.0, 0.002, 0.02])
    stamps = rng.choice(_STAMPS)

    def pick(values: list[str]) -> str:
        return rng.choice(_ODD) if rng.random() < odd_rate else rng.choice(values)

    def ws() -> str:
        return rng.choice(["", " ", "", "\n  ", "\t"])

    def args() -> str:
        pool = {
            "correlation": _INTS, "External id": _INTS, "Sequence number": _INTS,
            "device": ["0", "1", "300"], "Device Id": ["0", "1", "-1"], "stream": ["7", "0"],
            "grid": _TRIPLES, "block": _TRIPLES, "registers per thread": ["32", "255"],
            "shared memory": ["0", "49152"], "blocks per SM": ["1.5", "0", "2", "0.25"],
            "warps per SM": ["4.0", "16"], "est. achieved occupancy %": ["50", "12.5"],
            "Bytes": ["1024", "-1024", "null"], "bytes": ["4096", "null"],
            "Total Allocated": ["2048", "null"], "Addr": ["140000000000", "-1", "94823427"],
            "Device Type": ["0", "1"], "Input Dims": ["[[1, 2], [3]]", "[[1,2],[3]]", "[]"],
            "Input type": ['["float", "int"]', '"float"'], "other": ['{"a": [1, null]}', "true"],
        }
        keys = rng.sample(sorted(pool), rng.randrange(0, 8))
        return "{" + ",".join(f'"{k}":{ws()}{pick(pool[k])}' for k in keys) + "}"

    events = []
    for _ in range(rng.choice([10, 100, 600])):
        ph = rng.choice(["X", "X", "X", "i", "s", "f"])
        items = [f'"ph": "{ph}"', f'"cat": {pick(_STRINGS)}', f'"name": {pick(_STRINGS)}',
                 f'"pid": {pick(["1", "2", "300000"])}', f'"tid": {pick(["1", "70000"])}']
        if rng.random() < 0.95:
            items.append(f'"ts": {pick(stamps)}')
        if rng.random() < 0.9:
            items.append(f'"dur": {pick(_FLOATS)}')
        if ph in "sf":
            items += [f'"id": {pick(["1", "99999"])}', f'"bp": {rng.choice(_BPS)}']
        if rng.random() < 0.7:
            items.append(f'"args": {args()}')
        rng.shuffle(items)
        events.append("{" + ("," + ws()).join(items) + "}")
    if rng.random() < 0.2:
        at = rng.randrange(len(events) + 1)
        events.insert(at, '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1,'
                          ' "args": {"name": "main"}}')
    return _trace_text(events, bare=rng.random() < 0.2)


def test_random_traces_same_both_ways(tmp_path: Path, load_both: Callable[..., Loaded]) -> None:
    total: Counter[str] = Counter()
    for seed in range(40):
        rng = random.Random(seed)
        path = _write(tmp_path / f"r{seed}.json", _random_trace(rng))
        total += load_both(path, chunk_bytes=rng.choice([600, 4096, 4 << 20])).counts
    if HAS_SCANNER:
        assert total["fast"] > total["msgspec"] > 0, dict(total)


# ---- d: mutants of real traces ----------------------------------------------------------
# Small real traces; at small chunks most of their batches are read by the scanner.
MUTATED = ["a100_alexnet_inference.json.gz", "cupti_counters.json.gz",
           "mi250_rocm_minitoy.json.gz", "cpu_only.json.gz", "triton_example.json.gz"]
MUTANTS_PER_SOURCE = 20


def test_mutants_same_table_or_error_both_ways(
    public_traces: Path, tmp_path: Path, load_both: Callable[..., Loaded]
) -> None:
    total: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    kinds = set()
    for name in MUTATED:
        if not (public_traces / name).exists():
            continue
        src = Source.from_bytes(name, (public_traces / name).read_bytes())
        for seed in range(MUTANTS_PER_SOURCE):
            m = mutant(src, seed)
            kinds.add(m.kind)
            path = _write(tmp_path / (m.name + (".json.gz" if m.gzipped else ".json")), m.data)
            loaded = load_both(path, chunk_bytes=(4096, 65536, 4 << 20)[seed % 3])
            if isinstance(loaded.result, str):
                assert loaded.result.startswith("UsageError: "), (m.name, loaded.result)
                outcomes["error"] += 1
            else:
                outcomes["table"] += 1
            total += loaded.counts
            path.unlink()
    assert outcomes["table"] >= 20 and outcomes["error"] >= 5, dict(outcomes)
    assert len(kinds) >= 10, kinds  # most kinds of damage, gzip's included
    if HAS_SCANNER:
        assert total["fast"] >= 200, dict(total)
