"""Missing or odd parts degrade the analysis; they never crash it (property-based).

Real traces with random events removed (steps, annotations, launches, flows, memory
events, kernels: any of them), and small synthetic traces built from the event kinds the
analysis reads, with values drawn from the awkward corners (negative or zero durations,
nesting that overlaps, launches without kernels, kernels without launches). Whatever
loads must analyse and render.
"""

from __future__ import annotations

import gzip
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from attnprof.analysis.analyze import analyze_trace
from attnprof.errors import UsageError
from attnprof.render.trace_report import render_trace_report
from attnprof.trace import load_trace

_settings = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])


def _analyse(path: Path) -> None:
    try:
        trace = load_trace(path)
    except UsageError:
        return  # refusing an unreadable file is allowed; crashing on a readable one is not
    report = analyze_trace(trace)
    render_trace_report(report, Console(file=io.StringIO(), width=160), top=5)


def _events(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data, data["traceEvents"]


@pytest.fixture(scope="module")
def real_traces(cpu_record: Any, public_traces: Path) -> dict[str, tuple[dict, list]]:
    chosen = {"cpu naive": Path(cpu_record.result("naive").trace),
              "cpu flex-eager": Path(cpu_record.result("flex-eager").trace)}
    for name in ("triton_example.json.gz", "mi250_rocm_minitoy.json.gz",
                 "a100_alexnet_inference.json.gz"):
        if (public_traces / name).is_file():
            chosen[name] = public_traces / name
    return {name: _events(path) for name, path in chosen.items()}


@_settings
@given(data=st.data())
def test_real_traces_with_events_removed_still_analyse(
        real_traces: dict[str, tuple[dict, list]], tmp_path: Path, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(real_traces)))
    header, events = real_traces[name]
    # Remove one kind of event wholesale (what a different profiler setting leaves out),
    # then a random scattering of the rest.
    kinds = sorted({(e.get("ph"), e.get("cat")) for e in events}, key=str)
    dropped = set(data.draw(st.lists(st.sampled_from(kinds), max_size=3)))
    keep = [e for e in events if (e.get("ph"), e.get("cat")) not in dropped]
    rate = data.draw(st.sampled_from([0.0, 0.05, 0.3]))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    keep = [e for e in keep if e.get("ph") == "M" or rng.random() >= rate]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**header, "traceEvents": keep}))
    _analyse(path)


NAMES = ["ProfilerStep#1", "ProfilerStep#2", "attnprof::sdpa", "aten::bmm", "aten::copy_",
         "aten::scaled_dot_product_attention", "aten::_softmax", "aten::all", "aten::fill_",
         "cudaLaunchKernel", "cuLaunchKernelEx", "cudaDeviceSynchronize",
         "pytorch_flash::flash_fwd_kernel", "ampere_sgemm_32x32", "Memcpy HtoD", "[memory]"]
CATS = ["cpu_op", "user_annotation", "kernel", "cuda_runtime", "cuda_driver", "gpu_memcpy",
        "gpu_memset", "cpu_instant_event", "ac2g", "gpu_user_annotation", None]
event = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "X", "X", "i", "s", "f"]),
     "name": st.sampled_from(NAMES),
     "ts": st.integers(0, 2000),
     "pid": st.sampled_from([0, 1]),
     "tid": st.sampled_from([1, 2, 7])},
    optional={
        "cat": st.sampled_from(CATS),
        "dur": st.one_of(st.integers(-5, 500), st.just(0)),
        "id": st.integers(0, 5),
        "args": st.fixed_dictionaries({}, optional={
            "correlation": st.integers(0, 5),
            "External id": st.integers(0, 5),
            "Input Dims": st.lists(st.lists(st.integers(0, 4), max_size=3), max_size=3),
            "Bytes": st.integers(-64, 64),
            "Total Allocated": st.integers(0, 256),
            "grid": st.lists(st.integers(0, 4), min_size=3, max_size=3),
            "registers per thread": st.integers(0, 255),
            "est. achieved occupancy %": st.integers(0, 100),
            "device": st.integers(0, 1),
            "stream": st.integers(0, 8),
        }),
    },
)


@_settings
@given(events=st.lists(event, max_size=40))
def test_synthetic_traces_analyse(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    _analyse(path)
