"""Fixtures for the trace loader tests: public trace names, their json.load summaries, a capture."""

from __future__ import annotations

import functools
import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from attnprof.trace import ROW_COLUMNS, EventTable, Trace, load_trace

# <repo>/examples/traces (copied from ../shared/traces/public); the root conftest's
# ``public_traces`` fixture skips cleanly when it is absent. Names are listed here because
# parametrization happens at collection.
PUBLIC = Path(__file__).resolve().parents[2] / "examples" / "traces"
PUBLIC_NAMES = sorted(p.name for p in PUBLIC.glob("*.json.gz")) if PUBLIC.is_dir() else []
# Re-reading in tiny chunks costs ~10x a normal load: 4 KiB chunks for the small traces,
# 64 KiB for the mid-sized ones, and the three largest only at the default.
LARGE = {"a100_trace_control.json.gz", "a100_training_rank0.json.gz", "v100_training_large.json.gz"}
MID = {"a100_nccl.json.gz", "v100_ns_resolution_rank0.json.gz"}

_COMM = re.compile(r"(?i:nccl|rccl)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``public_name``: every public trace; ``rechunk``: (name, small chunk size) pairs."""
    if "public_name" in metafunc.fixturenames:
        metafunc.parametrize("public_name", PUBLIC_NAMES)
    if "rechunk" in metafunc.fixturenames:
        metafunc.parametrize(
            "rechunk",
            [(n, 65536 if n in MID else 4096) for n in PUBLIC_NAMES if n not in LARGE],
            ids=lambda p: f"{p[0]}-{p[1]}",
        )
    if "scan_chunk" in metafunc.fixturenames:
        # Both loader paths in small chunks (test_scan.py): 4 KiB for the small traces,
        # 64 KiB for the others but the three largest, in ten batches or more already.
        metafunc.parametrize(
            "scan_chunk",
            [(n, 4096 if (PUBLIC / n).stat().st_size < 100_000 else 65536)
             for n in PUBLIC_NAMES if n not in LARGE],
            ids=lambda p: f"{p[0]}-{p[1]}",
        )


@functools.cache
def _json_summary(path: Path) -> dict[str, Any]:
    """Independent counts and exact (fsum) duration sums of a trace, via plain ``json.load``.

    Only the small summary is cached, never the decoded events.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    durs: dict[str, list[float]] = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        if cat == "kernel":
            cat = "communication" if _COMM.search(e["name"]) else "compute"
        durs.setdefault(cat, []).append(e["dur"])
    return {
        "n_rows": sum(1 for e in events if e.get("ph") != "M"),
        "counts": {c: len(v) for c, v in durs.items()},
        "sums": {c: math.fsum(v) for c, v in durs.items()},
        "memory_bytes": [e["args"]["Bytes"] for e in events if e.get("name") == "[memory]"],
        "header": {k: v for k, v in doc.items() if k != "traceEvents"}
        if isinstance(doc, dict)
        else {},
    }


def _attention(q: Any, k: Any, v: Any) -> Any:
    """Naive attention, as written in the wild: out-of-place masked_fill and all."""
    import torch

    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


@pytest.fixture(scope="session")
def load_public(public_traces: Path) -> Any:
    """``load_public(name)``: the public trace loaded once per session (default chunks)."""
    return functools.cache(lambda name: load_trace(public_traces / name))


@pytest.fixture(scope="session")
def json_summary() -> Any:
    """``json_summary(path)``: counts, exact sums, [memory] bytes and header via json.load."""
    return _json_summary


def _assert_same_array(x: np.ndarray, y: np.ndarray, what: object) -> None:
    """Same dtype, shape and values; floats also the same nans and the same signed zeros."""
    assert x.dtype == y.dtype, (what, x.dtype, y.dtype)
    assert x.shape == y.shape, (what, x.shape, y.shape)
    if x.dtype.kind != "f":
        assert np.array_equal(x, y), what
        return
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    assert np.array_equal(nan_x, nan_y), (what, "nan")
    assert np.array_equal(x[~nan_x], y[~nan_y]), what
    # == says 0.0 == -0.0; the tables must agree on the sign too.
    assert np.array_equal(np.signbit(x[~nan_x]), np.signbit(y[~nan_y])), (what, "signbit")


_SIDE = ("strings", "launches", "memory_records")  # an EventTable's fields besides its rows


def _assert_same_table(a: EventTable, b: EventTable) -> None:
    assert {f.name for f in msgspec.structs.fields(a)} == {*ROW_COLUMNS, *_SIDE}  # all compared
    for c in ROW_COLUMNS:
        _assert_same_array(getattr(a, c), getattr(b, c), c)
    assert a.strings.values == b.strings.values
    for side in _SIDE[1:]:
        sa, sb = getattr(a, side), getattr(b, side)
        for f in msgspec.structs.fields(sa):
            _assert_same_array(getattr(sa, f.name), getattr(sb, f.name), (side, f.name))


def _assert_same_trace(a: Trace, b: Trace) -> None:
    _assert_same_table(a.events, b.events)
    assert a.meta == b.meta


@pytest.fixture(scope="session")
def assert_same_table() -> Any:
    """``assert_same_table(a, b)``: every column and side-table array with the same dtype,
    shape and values (nans and signed zeros included), and the same strings."""
    return _assert_same_table


@pytest.fixture(scope="session")
def assert_same_array() -> Any:
    """``assert_same_array(x, y, what)``: same dtype, shape and values (nans, signed zeros)."""
    return _assert_same_array


@pytest.fixture(scope="session")
def assert_same_trace() -> Any:
    """``assert_same_trace(a, b)``: :func:`assert_same_table` of the events, and equal meta."""
    return _assert_same_trace


#: The "attnprof" header block the capture carries.
CAPTURE_METADATA = {"variant": "naive", "steps": 2}


@pytest.fixture(scope="session")
def capture_metadata() -> dict[str, Any]:
    """The ``attnprof`` metadata block :func:`cpu_capture` writes into its header."""
    return CAPTURE_METADATA


#: A 1 MiB allocation the capture makes on purpose, to find among the [memory] events.
KNOWN_ALLOC_BYTES = 256 * 1024 * 4


@pytest.fixture(scope="session")
def known_alloc_bytes() -> int:
    """Bytes of the allocation :func:`cpu_capture` makes and frees once per step."""
    return KNOWN_ALLOC_BYTES


@pytest.fixture(scope="session")
def cpu_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real torch.profiler CPU trace of a small attention forward (plain JSON)."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    q, k, v = (torch.randn(2, 4, 32, 16) for _ in range(3))
    path = tmp_path_factory.mktemp("capture") / "attention.json"
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True
    ) as prof:
        # What attnprof's own captures add to the header (measure/capture.py).
        prof.add_metadata_json("attnprof", json.dumps(CAPTURE_METADATA))
        for _ in range(2):
            with record_function("attention_forward"):
                _attention(q, k, v)
            known = torch.empty(KNOWN_ALLOC_BYTES // 4, dtype=torch.float32)
            del known
    prof.export_chrome_trace(str(path))
    return path
