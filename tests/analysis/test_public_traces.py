"""The analysis on real GPU, ROCm, multi-rank and CPU-only traces recorded elsewhere.

Counts and times are checked against an independent pass over the raw JSON (``json.load``,
no attnprof code): the whole-trace breakdown exactly, and the per-step kernel assignment
(by launch correlation, never by time) count for count.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.analysis.index.regions import PROFILER_STEP, WHOLE_TRACE
from attnprof.trace import load_trace

# Listed at collection time for parametrization; the ``public_traces`` fixture skips the
# tests cleanly when the folder is absent.
PUBLIC = Path(__file__).resolve().parents[2] / "examples" / "traces"
PUBLIC_NAMES = sorted(p.name for p in PUBLIC.glob("*.json.gz")) if PUBLIC.is_dir() else []


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_every_public_trace_analyses(name: str, public_traces: Path, load_public: Any,
                                     raw_summary: Any) -> None:
    trace, report = load_public(name)
    raw = raw_summary(public_traces / name)
    b = report.breakdown
    # The whole-trace breakdown equals the raw sums exactly (both are correctly rounded).
    assert b.count == raw["count"] and b.total_us == raw["total_us"]
    assert report.events == trace.meta.n_events and report.regions
    # Every device event is in exactly one region or counted as unassigned.
    in_regions = sum(k.count for r in report.regions for k in r.kernels)
    if report.regions[0].kernel_source == "kernels":
        assert in_regions + report.unassigned_device_events == b.count
        summed = math.fsum(k.total_us for r in report.regions for k in r.kernels)
        assert math.isclose(summed + report.unassigned_device_us, b.total_us, rel_tol=1e-9)
    for region in report.regions:
        assert region.instances >= 1 and region.cpu_us_per_forward >= 0
        assert region.verdict in ("cpu-bound", "device-bound", "cpu-only", "unknown")
        if region.device_us_per_forward is not None:
            assert region.idle_us is not None and region.idle_us >= 0
            assert all(g.dur_us > 0 for g in region.gaps)
    for f in report.findings:
        assert f.evidence and f.fix and f.severity in ("info", "warning", "critical")


@pytest.mark.parametrize("name", [n for n in PUBLIC_NAMES if n not in ("cpu_only.json.gz",)])
def test_kernels_per_step_match_an_independent_join(name: str, public_traces: Path,
                                                    load_public: Any, raw_summary: Any) -> None:
    _, report = load_public(name)
    raw = raw_summary(public_traces / name)
    (region,) = report.regions
    if region.name != PROFILER_STEP:
        assert region.name == WHOLE_TRACE and raw["steps"] == 0
        return
    assert region.instances == raw["steps"]
    if region.kernel_source != "kernels":
        return
    assert sum(k.count for k in region.kernels) == raw["step_count"]
    assert math.isclose(math.fsum(k.total_us for k in region.kernels), raw["step_us"],
                        rel_tol=1e-9, abs_tol=1e-9)


def test_tiny_kernels_make_a_step_cpu_bound(load_public: Any) -> None:
    _, report = load_public("mi250_rocm_minitoy.json.gz")
    assert report.device == "rocm"
    (region,) = report.regions
    assert region.verdict == "cpu-bound"
    assert region.cpu_us_per_forward > 10 * region.device_us_per_forward
    (finding,) = report.findings_for("cpu-bound")
    assert any("tiny" in e for e in finding.evidence)
    assert region.launch_apis["hipLaunchKernel"] > 0
    assert all(k.launched_by for k in region.kernels)


def test_device_bound_steps_are_not_flagged(load_public: Any) -> None:
    _, report = load_public("v100_ns_resolution_rank0.json.gz")
    (region,) = report.regions
    assert region.verdict == "device-bound"
    assert region.device_us_per_forward >= region.cpu_us_per_forward
    assert not report.findings_for("cpu-bound")


def test_cudnn_style_launches_say_occupancy_is_not_reported(load_public: Any) -> None:
    # cuDNN convolutions and NCCL kernels here launch through cudaLaunchKernelExC, the path
    # for which CUPTI mostly reports 0% occupancy: a gap in the measurement, said so.
    _, report = load_public("a100_nccl.json.gz")
    ex = [k for r in report.regions for k in r.kernels if k.launch_api == "cudaLaunchKernelExC"]
    assert ex
    for k in ex:
        assert (k.note is not None and "not reported by CUPTI" in k.note) == (not k.occupancy)
    assert any(k.short.startswith("cuDNN") and k.note for k in ex)
    assert all(k.category == "communication" for k in ex if k.family == "nccl")
    assert report.rank == 0 and report.world_size == 2


def test_launch_properties_and_decoding(load_public: Any) -> None:
    _, report = load_public("triton_example.json.gz")
    (region,) = report.regions
    (kernel,) = region.kernels
    assert kernel.family == "triton" and kernel.launch_api == "cuLaunchKernel"
    assert kernel.launched_by == "triton_poi_fused_add_cos_sin_0"
    assert kernel.grid == [1, 1, 1] and kernel.block == [128, 1, 1]
    assert kernel.registers_per_thread == 16 and kernel.shared_memory == 0


def test_graph_launches_and_kernels_launched_before_the_trace(load_public: Any) -> None:
    _, report = load_public("a100_training_rank0.json.gz")
    (region,) = report.regions
    assert region.launch_apis.get("cudaGraphLaunch", 0) > 0
    # Kernels whose launch happened before profiling began belong to no step.
    assert report.unassigned_device_events > 0


def test_traces_without_device_activity(load_public: Any) -> None:
    _, cpu = load_public("cpu_only.json.gz")
    assert cpu.device == "cpu" and cpu.regions[0].verdict == "cpu-only"
    _, cupti = load_public("cupti_counters.json.gz")
    assert cupti.device == "cuda" and cupti.regions[0].verdict == "unknown"
    (note,) = cupti.findings_for("cpu-only")
    assert "without device activity" in note.title


def test_memory_from_allocation_events(load_public: Any) -> None:
    _, report = load_public("v100_training_large.json.gz")
    (region,) = report.regions
    assert region.memory_device == "cuda"
    assert region.peak_memory_bytes and region.largest_allocation_bytes
    assert region.largest_allocation_bytes <= region.peak_memory_bytes
    assert region.largest_allocation_op


def _rewritten(public_traces: Path, name: str, tmp_path: Path, edit: Any) -> Path:
    with gzip.open(public_traces / name, "rb") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in map(edit, doc["traceEvents"]) if e is not None]
    out = tmp_path / name.replace(".gz", "")
    out.write_text(json.dumps(doc))
    return out


def _without_correlation(e: dict[str, Any]) -> dict[str, Any]:
    if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
        e["args"] = {k: v for k, v in e["args"].items() if k != "correlation"}
    return e


def _without_launches(e: dict[str, Any]) -> dict[str, Any] | None:
    return None if e.get("cat") in ("cuda_runtime", "cuda_driver") else e


@pytest.mark.parametrize("name", ["mi250_rocm_minitoy.json.gz", "triton_example.json.gz"])
def test_kernels_stay_linked_through_flows_and_external_ids(
        name: str, public_traces: Path, load_public: Any, tmp_path: Path) -> None:
    _, original = load_public(name)
    expected = {(k.name, k.count) for k in original.regions[0].kernels}
    # No correlation on the device events: the ac2g flow arriving at each one carries it.
    by_flow = analyze_trace(load_trace(_rewritten(public_traces, name, tmp_path,
                                                  _without_correlation)))
    assert {(k.name, k.count) for k in by_flow.regions[0].kernels} == expected
    assert [k.call_path for k in by_flow.regions[0].kernels] == [
        k.call_path for k in original.regions[0].kernels]
    # No launch events at all: the External id shared by the op and its kernels links them.
    by_id = analyze_trace(load_trace(_rewritten(public_traces, name, tmp_path, _without_launches)))
    assert sum(k.count for k in by_id.regions[0].kernels) == original.breakdown.count
    assert all(k.launched_by for k in by_id.regions[0].kernels)


def test_kernels_group_by_op_path_not_by_user_annotation(load_public: Any) -> None:
    # The AlexNet trace wraps warm-up and measured forwards in differently named annotations
    # ("...|warmup|forward", "...|measure|forward"); the same GEMM from the same aten::addmm
    # is one row, and the path names ops only.
    _, report = load_public("a100_alexnet_inference.json.gz")
    (region,) = report.regions
    keys = [(k.name, k.call_path) for k in region.kernels]
    assert len(keys) == len(set(keys))
    assert not [k for k in region.kernels if k.call_path and "[param|" in k.call_path]
    sgemm = [k for k in region.kernels if k.name == "ampere_sgemm_32x32_sliced1x4_tn"]
    assert [(k.count, k.call_path) for k in sgemm] == [(6, "aten::linear › aten::addmm")]


def test_a_step_left_open_is_cut_at_the_last_recorded_event(load_public: Any) -> None:
    # triton_example's ProfilerStep#1 claims 13.3 s in a 0.36 s capture; its real work, the
    # compiled region, is 1.35 ms. CPU time must not count seconds nothing accounts for.
    _, report = load_public("triton_example.json.gz")
    (region,) = report.regions
    assert 1_350 < region.cpu_us_per_forward < 2_000
    (finding,) = report.findings_for("cpu-bound")
    assert any("1 kernel per forward" in e for e in finding.evidence)
