"""kernel_breakdown: exact against json.load on the public traces, empty on CPU-only ones."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from attnprof.analysis.passes.breakdown import CATEGORIES, kernel_breakdown
from attnprof.trace import load_trace

# json_summary's keys for the breakdown's categories.
JSON_KEYS = {
    "compute": "compute",
    "communication": "communication",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
}


def test_breakdown_matches_json_load(
    public_traces: Path, public_name: str, load_public: Any, json_summary: Any
) -> None:
    b = kernel_breakdown(load_public(public_name))
    want = json_summary(public_traces / public_name)
    assert [c.category for c in b.categories] == list(CATEGORIES)
    for cat in b.categories:
        assert cat.count == want["counts"].get(JSON_KEYS[cat.category], 0), cat.category
        assert cat.total_us == want["sums"].get(JSON_KEYS[cat.category], 0.0), cat.category
    assert b.count == sum(c.count for c in b.categories) == sum(k.count for k in b.kernels)
    assert b.total_us == pytest.approx(sum(c.total_us for c in b.categories), rel=1e-12)
    if b.is_empty:
        assert b.kernels == () and b.total_us == 0.0
        return
    assert math.isclose(sum(k.share for k in b.kernels), 1.0, rel_tol=1e-9)
    totals = [k.total_us for k in b.kernels]
    assert totals == sorted(totals, reverse=True)
    for k in b.kernels:
        assert k.min_us <= k.mean_us <= k.max_us and k.count >= 1


def test_cpu_capture_gives_an_empty_breakdown(cpu_capture: Path) -> None:
    b = kernel_breakdown(load_trace(cpu_capture))
    assert b.is_empty and b.kernels == () and b.count == 0 and b.total_us == 0.0
    assert all(c.count == 0 and c.total_us == 0.0 and c.share == 0.0 for c in b.categories)


def test_per_name_statistics(tmp_path: Path) -> None:
    def kernel(name: str, dur: float, cat: str = "kernel") -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": 1, "dur": dur}

    events = [
        kernel("gemm", 10.0), kernel("gemm", 30.0), kernel("gemm", 20.0),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 40.0),
        kernel("Memcpy HtoD (Pageable -> Device)", 0.5, "gpu_memcpy"),
        kernel("Memset (Device)", 0.25, "gpu_memset"),
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 99},
        {"ph": "X", "cat": "kernel", "name": "no duration", "pid": 0, "tid": 7, "ts": 3},
    ]  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    b = kernel_breakdown(load_trace(path))
    assert b.count == 6 and b.total_us == 100.75
    gemm = next(k for k in b.kernels if k.name == "gemm")
    assert (gemm.count, gemm.total_us, gemm.mean_us, gemm.min_us, gemm.max_us) == (
        3,
        60.0,
        20.0,
        10.0,
        30.0,
    )
    assert gemm.category == "compute" and gemm.share == pytest.approx(60 / 100.75)
    assert [k.category for k in b.kernels] == ["compute", "communication", "memcpy", "memset"]
    assert b.category("communication").total_us == 40.0
    assert b.category("memset").count == 1
