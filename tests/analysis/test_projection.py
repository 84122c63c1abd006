"""The pure projection pass over a real comparison's rows: bounds, the projection's
borrowed efficiency, and the memory estimate's anchor at the measured seq."""

from __future__ import annotations

import pytest

from attnprof.analysis.projection import (
    bound_of,
    device_target,
    estimated_peak_bytes,
    project_record,
)
from attnprof.knowledge.devices import DEVICES, device_for_name
from attnprof.record.compare import CompareRecord
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan


@pytest.fixture(scope="module")
def record() -> CompareRecord:
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                        max_samples=5, min_warmup_calls=1, rounds=1),
                        check_accuracy=False, measure_ceilings=False, threads=1)
    return compare(variants=["naive", "sdpa"], settings=settings, batch=1, heads=2, seq=128,
                   head_dim=32, device="cpu")


def test_a_projection_borrows_the_efficiency_measured_on_a_kin_device(
        record: CompareRecord) -> None:
    # As if these rows had been measured on an H100: a projection to the H200 (same
    # family) divides the H200's bound by the share of its bound each row reached there;
    # the MI300X (another family) gets a bound only.
    h100, h200, mi300x = (device_target(DEVICES[n], "float32")
                          for n in ("h100-sxm", "h200", "mi300x"))
    found = project_record(record.results, record.workload, [h200, mi300x],
                           {"naive": True, "sdpa": False}, h100)
    for p in found:
        row = record.result(p.variant)
        assert row.latency_ms is not None and p.bound is not None
        if p.target == "h200":
            there = bound_of(row.flops, row.traffic_bytes, h100)
            assert there is not None
            share = min(there.seconds / (row.latency_ms.median / 1e3), 1.0)
            assert p.projection_s == pytest.approx(p.bound.seconds / share)
            assert p.projection_s >= p.bound.seconds  # never faster than the bound
            assert "as measured on h100-sxm" in p.projection_note
        else:
            assert p.projection_s is None
            assert "not a cdna3 device" in p.projection_note


def test_the_memory_estimate_is_the_measured_peak_at_the_measured_seq(
        record: CompareRecord) -> None:
    for row in record.results:
        assert row.peak_memory_bytes is not None
        for quadratic in (True, False):
            at_own = estimated_peak_bytes(row.peak_memory_bytes, record.workload,
                                          record.workload.seq, quadratic)
            assert at_own == pytest.approx(row.peak_memory_bytes)
            assert estimated_peak_bytes(row.peak_memory_bytes, record.workload,
                                        2 * record.workload.seq, quadratic) > at_own


@pytest.mark.parametrize(("name", "device"), [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("NVIDIA L40S", "l40s"), ("NVIDIA L4", "l4"), ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA H200", "h200"), ("NVIDIA B200", "b200")])
def test_a_records_device_name_finds_its_table_entry(name: str, device: str) -> None:
    found = device_for_name(name)
    assert found is not None and found.name == device
    assert device_for_name("AMD EPYC 7B13 64-Core Processor") is None
