"""Every public torch.profiler trace loads, and agrees with plain json.load."""

from __future__ import annotations

import gzip
import math
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attnprof.trace import load_trace


def test_public_trace_matches_json_load(
    public_traces: Path, public_name: str, load_public: Any, json_summary: Any
) -> None:
    trace = load_public(public_name)
    t, want = trace.events, json_summary(public_traces / public_name)

    assert len(t) == trace.meta.n_events == want["n_rows"]
    assert trace.meta.n_dropped == 0
    complete = t.mask_ph("X")
    comm = t.mask_name(r"(?i:nccl|rccl)")
    masks = {
        "compute": complete & t.mask_cat("kernel") & ~comm,
        "communication": complete & t.mask_cat("kernel") & comm,
        "gpu_memcpy": complete & t.mask_cat("gpu_memcpy"),
        "gpu_memset": complete & t.mask_cat("gpu_memset"),
        "cpu_op": complete & t.mask_cat("cpu_op"),
    }
    for cat, mask in masks.items():
        assert int(mask.sum()) == want["counts"].get(cat, 0), cat
        # fsum is exactly rounded: equal sums mean every duration was read exactly.
        assert math.fsum(t.dur[mask].tolist()) == want["sums"].get(cat, 0.0), cat
    memory = t.mask_name(r"^\[memory\]$")
    assert t.bytes[memory].tolist() == [float(b) for b in want["memory_bytes"]]


def test_public_trace_metadata(
    public_traces: Path, public_name: str, load_public: Any, json_summary: Any
) -> None:
    trace = load_public(public_name)
    meta, header = trace.meta, json_summary(public_traces / public_name)["header"]
    assert meta.schema_version == header.get("schemaVersion")
    assert meta.trace_name == header.get("traceName")
    assert meta.display_time_unit == header.get("displayTimeUnit")
    assert meta.base_time_ns == header.get("baseTimeNanoseconds")
    assert len(meta.device_properties) == len(header.get("deviceProperties", []))
    dist = header.get("distributedInfo")
    if dist is None:
        assert meta.distributed is None
    else:
        assert meta.distributed is not None
        assert meta.distributed.rank == dist.get("rank")
        assert meta.distributed.world_size == dist.get("world_size")
        assert meta.distributed.backend == dist.get("backend")
    t = trace.events
    # kineto's "Spans"/"Traces" pseudo-processes get labelled negative ids, never -1.
    assert "Spans" in meta.id_labels.values()
    assert all(pid <= -2 for pid in meta.id_labels)
    host = t.pid[t.mask_cat("cpu_op")]
    assert host.size and meta.process_labels.get(int(host[0])) == "CPU"
    assert np.nanmin(t.ts) >= 0 and np.nanmin(t.ts) < 1


def test_tiny_chunks_give_the_same_table(
    public_traces: Path, rechunk: tuple[str, int], load_public: Any, assert_same_table: Any
) -> None:
    name, chunk = rechunk
    whole = load_public(name)
    tiny = load_trace(public_traces / name, chunk_bytes=chunk)
    assert_same_table(whole.events, tiny.events)
    assert whole.meta == tiny.meta


def test_nanosecond_timestamps_are_exact(public_traces: Path, load_public: Any) -> None:
    """The V100 "ns resolution" trace writes µs with 3 decimals at 1.7e15: float64 cannot hold
    those digits, so ts is kept relative to an integer origin and must match to the ns."""
    path = public_traces / "v100_ns_resolution_rank0.json.gz"
    if not path.exists():
        pytest.skip("v100_ns_resolution_rank0.json.gz not present")
    trace = load_public(path.name)
    assert trace.meta.display_time_unit == "ns"  # a display hint only: values are µs
    with gzip.open(path) as f:
        text = f.read().decode()
    # Every event has exactly one "ts"; metadata events are the ones with "ph": "M".
    events = re.split(r"\n  \},\s*\{", text[text.index('"traceEvents"') :])
    stamps = [
        Decimal(m.group(1))
        for e in events
        if '"ph": "M"' not in e and (m := re.search(r'"ts": (-?[0-9.]+)', e))
    ]
    assert len(stamps) == len(trace.events)
    want = np.array([float(s - trace.meta.ts_origin_us) for s in stamps])
    assert np.abs(trace.events.ts - want).max() < 1e-6  # µs: far below one ns
    naive = np.array([float(s) for s in stamps]) - trace.meta.ts_origin_us
    assert np.abs(naive - want).max() > 0.01  # what plain float64 parsing would lose


def test_kernel_launch_details(public_traces: Path, load_public: Any) -> None:
    if not (public_traces / "a100_alexnet_inference.json.gz").exists():
        pytest.skip("a100_alexnet_inference.json.gz not present")
    t = load_public("a100_alexnet_inference.json.gz").events
    kernels = t.where(t.mask_cat("kernel"))
    assert (kernels.launch >= 0).all()
    assert (kernels.grid > 0).all() and (kernels.block > 0).all()
    assert (kernels.registers_per_thread > 0).all()
    assert np.isfinite(kernels.occupancy).all()
    assert (kernels.correlation >= 0).all() and (kernels.stream >= 0).all()
    # Launches and kernels pair up by correlation id, which is what the table is for.
    runtime = t.where(t.mask_cat("cuda_runtime") & t.mask_name("LaunchKernel"))
    assert set(kernels.correlation.tolist()) <= set(runtime.correlation.tolist())
    copies = t.where(t.mask_cat("gpu_memcpy"))
    assert (copies.bytes > 0).all() and (copies.launch == -1).all()


def test_rocm_and_triton_quirks(public_traces: Path, load_public: Any) -> None:
    if not all(
        (public_traces / n).exists()
        for n in ("mi250_rocm_minitoy.json.gz", "triton_example.json.gz")
    ):
        pytest.skip("ROCm/Triton traces not present")
    t = load_public("mi250_rocm_minitoy.json.gz").events
    # ROCm puts grid/block on the hipLaunchKernel call and writes "stream": "0x0".
    launches = t.where(t.mask_cat("cuda_runtime") & t.mask_name("LaunchKernel"))
    assert len(launches) and (launches.grid > 0).all() and (launches.stream == 0).all()
    kernels = t.where(t.mask_cat("kernel"))
    assert set(kernels.correlation.tolist()) <= set(launches.correlation.tolist())
    t = load_public("triton_example.json.gz").events
    # Inductor's cpu_op carries "grid": "grid(100,)", a string: no launch row for it.
    assert (t.launch[t.mask_cat("cpu_op")] == -1).all()
    assert (t.launch[t.mask_cat("kernel")] >= 0).all()
