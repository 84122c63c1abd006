"""The device as the trace says: CUDA, ROCm, XPU, MTIA, or an accelerator it cannot name.

XPU and MTIA traces are made from the public A100 AlexNet trace by renaming what those
devices' tracers write differently; everything else (ops, kernels, correlation ids, times)
stays as recorded. Where the names come from:

* Categories: kineto's ``libkineto/src/ActivityType.cpp`` maps ``ActivityType`` to the
  ``cat`` a Chrome trace writes: ``XPU_RUNTIME`` -> ``"xpu_runtime"``, ``MTIA_RUNTIME`` ->
  ``"mtia_runtime"``, ``MTIA_CCP_EVENTS`` -> ``"mtia_ccp_events"`` ("MTIA on-device CCP
  events"); XPU kernels, copies and fills keep ``kernel``/``gpu_memcpy``/``gpu_memset``
  (PyTorch's XPU kineto plugin, ``XPUActivityApi``, records them as CONCURRENT_KERNEL,
  GPU_MEMCPY, GPU_MEMSET).
* XPU runtime calls: Intel's Unified Runtime entry points as XPU traces and profiler tables
  show them: ``urEnqueueKernelLaunch`` (the launch correlated with a ``kernel`` event),
  ``urEnqueueUSMMemcpy``, ``urEnqueueUSMFill``, ``urQueueFinish``. The plugin records only
  the GPU-operation API class, so the CUDA trace's other runtime calls are dropped, and so
  are its ``cuda_sync`` events and CUDA device properties.
* MTIA's runtime call names are not public: the calls keep their recorded names and only the
  categories change (the category alone tells the device).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from attnprof.analysis.analyze import analyze_trace
from attnprof.trace import load_trace

SOURCE = "a100_alexnet_inference.json.gz"
_DEVICE = ("kernel", "gpu_memcpy", "gpu_memset")
_XPU_CALLS = {"cudaLaunchKernel": "urEnqueueKernelLaunch", "cudaMemcpyAsync": "urEnqueueUSMMemcpy",
              "cudaMemsetAsync": "urEnqueueUSMFill", "cudaStreamSynchronize": "urQueueFinish",
              "cudaDeviceSynchronize": "urQueueFinish"}


def _rewrite(public_traces: Path, tmp_path: Path, name: str, edit: Any,
             keep_properties: bool = False) -> Path:
    with gzip.open(public_traces / SOURCE, "rb") as f:
        doc = json.load(f)
    doc["traceEvents"] = [e for e in map(edit, doc["traceEvents"]) if e is not None]
    if not keep_properties:
        doc.pop("deviceProperties", None)
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(doc))
    return out


def _as_xpu(e: dict[str, Any]) -> dict[str, Any] | None:
    cat = e.get("cat")
    if cat == "cuda_sync":
        return None
    if cat == "cuda_runtime":
        if e.get("name") not in _XPU_CALLS:
            return None
        return {**e, "cat": "xpu_runtime", "name": _XPU_CALLS[e["name"]]}
    return e


def _as_mtia(e: dict[str, Any]) -> dict[str, Any] | None:
    cat = e.get("cat")
    if cat == "cuda_sync":
        return None
    if cat == "cuda_runtime":
        return {**e, "cat": "mtia_runtime"}
    if cat in _DEVICE:
        return {**e, "cat": "mtia_ccp_events"}
    return e


def test_public_gpu_traces_say_cuda_or_rocm(load_public: Any) -> None:
    _, a100 = load_public(SOURCE)
    assert a100.device == "cuda" and "cuda_runtime" in (a100.device_evidence or "")
    assert a100.device_categories == {"gpu_memcpy": 16, "gpu_memset": 3, "kernel": 79}
    assert a100.unmodelled_categories == {} and not a100.findings_for("device-unmodelled")
    _, mi250 = load_public("mi250_rocm_minitoy.json.gz")
    # ROCm records HIP calls under cuda_runtime: the call names tell it apart.
    assert mi250.device == "rocm" and "hip" in (mi250.device_evidence or "")
    _, cpu = load_public("cpu_only.json.gz")
    assert cpu.device == "cpu" and cpu.device_categories == {}


def test_an_xpu_trace_is_xpu_and_its_kernels_are_modelled(
        public_traces: Path, load_public: Any, tmp_path: Path) -> None:
    _, cuda = load_public(SOURCE)
    report = analyze_trace(load_trace(_rewrite(public_traces, tmp_path, "xpu", _as_xpu)))
    assert report.device == "xpu"
    assert report.device_evidence == "xpu_runtime events"
    assert report.unmodelled_categories == {} and not report.findings_for("device-unmodelled")
    # The same kernels, each linked to its launch (now urEnqueueKernelLaunch) and its op.
    (region,), (original,) = report.regions, cuda.regions
    assert [(k.name, k.count, k.call_path) for k in region.kernels] == [
        (k.name, k.count, k.call_path) for k in original.kernels]
    assert region.launch_apis["urEnqueueKernelLaunch"] == 79
    assert region.verdict in ("cpu-bound", "device-bound")
    assert report.breakdown.count == cuda.breakdown.count


def test_an_mtia_trace_says_its_device_events_are_not_modelled(
        public_traces: Path, load_public: Any, tmp_path: Path) -> None:
    _, cuda = load_public(SOURCE)
    report = analyze_trace(load_trace(_rewrite(public_traces, tmp_path, "mtia", _as_mtia)))
    assert report.device == "mtia"
    assert report.unmodelled_categories == {"mtia_ccp_events": 98, "mtia_runtime": 361}
    assert report.device_categories == {} and report.breakdown.count == 0
    (finding,) = report.findings_for("device-unmodelled")
    assert finding.title == "mtia trace: attnprof does not model its device events"
    assert any("mtia_ccp_events ×98, mtia_runtime ×361" in e for e in finding.evidence)
    assert any("the CPU side" in e and "is analysed" in e for e in finding.evidence)
    # Never called a CPU-only trace, never told to record CUDA activity.
    assert not report.findings_for("cpu-only")
    # The CPU side is analysed as for the original: the same ops per forward.
    (region,), (original,) = report.regions, cuda.regions
    assert region.verdict == "unknown" and region.kernel_source == "cpu-ops"
    assert {o.name: o.per_forward for o in region.ops} == {
        o.name: o.per_forward for o in original.ops}
    assert region.cpu_us_per_forward > 0


def test_device_work_without_a_named_runtime_is_an_accelerator(
        public_traces: Path, tmp_path: Path) -> None:
    def strip_runtime(e: dict[str, Any]) -> dict[str, Any] | None:
        return None if e.get("cat") in ("cuda_runtime", "cuda_sync") else e

    report = analyze_trace(load_trace(_rewrite(public_traces, tmp_path, "anon",
                                               strip_runtime)))
    # Kernels but no runtime calls and no device properties: not assumed to be CUDA.
    assert report.device == "accelerator"
    assert report.breakdown.count == 98 and report.unmodelled_categories == {}
    with_props = analyze_trace(load_trace(_rewrite(public_traces, tmp_path, "props",
                                                   strip_runtime, keep_properties=True)))
    assert with_props.device == "cuda" and with_props.device_evidence == (
        "CUDA device properties")
