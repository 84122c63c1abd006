"""A real CPU capture, made by the test with torch.profiler, loads with its ops and memory."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np

from attnprof.trace import load_trace


def raw_events(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["traceEvents"]


def test_ops_and_annotations(cpu_capture: Path) -> None:
    trace = load_trace(cpu_capture)
    t = trace.events
    raw = raw_events(cpu_capture)
    ops = t.mask_cat("cpu_op")
    assert int(ops.sum()) == sum(e.get("cat") == "cpu_op" for e in raw) > 0
    names = set(t.where(ops).names())
    assert {"aten::matmul", "aten::softmax", "aten::masked_fill"} <= names
    steps = t.where(t.mask_cat("user_annotation") & t.mask_name("^attention_forward$"))
    assert len(steps) == 2
    # Every op of a step lies inside it: timestamps are exact, so containment holds
    # without tolerances even though the capture's absolute stamps are ~5e12 µs.
    for start, dur in zip(steps.ts.tolist(), steps.dur.tolist(), strict=True):
        inside = ops & (t.ts >= start) & (t.ts < start + dur)
        assert inside.sum() > 5
        assert (t.ts[inside] + t.dur[inside] <= start + dur).all()
    mm = t.where(ops & t.mask_name("^aten::matmul$"))
    assert t.strings[int(mm.input_dims[0])] == "[[2, 4, 32, 16], [2, 4, 16, 32]]"
    assert "float" in t.strings[int(mm.input_types[0])]
    assert (t.where(ops).sequence_number >= -1).all() and (t.where(ops).sequence_number >= 0).any()
    assert trace.meta.process_labels.get(int(mm.pid[0])) == "CPU"
    assert (int(mm.pid[0]), int(mm.tid[0])) in trace.meta.thread_names
    assert trace.meta.base_time_ns is not None and trace.meta.n_dropped == 0


def test_attnprof_metadata_block(cpu_capture: Path, capture_metadata: dict[str, Any]) -> None:
    assert load_trace(cpu_capture).meta.attnprof == capture_metadata


def test_memory_events_have_their_bytes(cpu_capture: Path, known_alloc_bytes: int) -> None:
    t = load_trace(cpu_capture).events
    raw = [e for e in raw_events(cpu_capture) if e.get("name") == "[memory]"]
    memory = t.where(t.mask_name(r"^\[memory\]$"))
    assert len(memory) == len(raw) > 0
    assert memory.ph.tolist() == [b"i"] * len(raw)
    assert memory.bytes.tolist() == [float(e["args"]["Bytes"]) for e in raw]
    assert memory.total_allocated.tolist() == [float(e["args"]["Total Allocated"]) for e in raw]
    assert memory.addr.tolist() == [e["args"]["Addr"] for e in raw]
    assert (memory.device_type == 0).all()  # CPU
    # The capture allocates and frees 1 MiB twice on purpose.
    assert (memory.bytes == known_alloc_bytes).sum() == 2
    assert (memory.bytes == -known_alloc_bytes).sum() == 2
    assert np.isnan(t.bytes[t.mask_cat("cpu_op")]).all()


def test_capture_chunked_and_gzipped_give_the_same_table(
    tmp_path: Path, cpu_capture: Path, assert_same_table: Any
) -> None:
    whole = load_trace(cpu_capture)
    packed = tmp_path / "attention.json.gz"
    packed.write_bytes(gzip.compress(cpu_capture.read_bytes()))
    for other in (load_trace(cpu_capture, chunk_bytes=4096), load_trace(packed, chunk_bytes=1000)):
        assert_same_table(whole.events, other.events)
        assert other.meta.ts_origin_us == whole.meta.ts_origin_us


def test_cpu_capture_keeps_torch_out_of_the_loader() -> None:
    """Loading needs no torch: the analysis commands must not pay its import time."""
    import subprocess
    import sys

    code = ("import sys, attnprof.trace, attnprof.analysis.passes.breakdown; "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
