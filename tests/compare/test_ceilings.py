"""This machine's matmul and copy ceilings, and rates read as shares of them."""

from __future__ import annotations

import pytest
from rich.console import Console

from attnprof.measure.ceilings import measure_ceilings
from attnprof.record.compare import RunRecord
from attnprof.render.compare_table import render_compare
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_ceilings_are_measured_quickly_in_the_workloads_dtype(dtype: str) -> None:
    c = measure_ceilings("cpu", dtype)
    assert c.matmul_flops_per_s > 0 and c.bandwidth_bytes_per_s > 0
    assert "torch.mm" in c.method and dtype in c.method


def test_rates_are_shares_of_the_ceilings_in_the_record_and_the_table() -> None:
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                        max_samples=5, min_warmup_calls=1),
                        measure_memory=False, check_accuracy=False)
    record = compare(variants=["sdpa", "naive"], settings=settings, batch=1, heads=4,
                     kv_heads=1, seq=128, head_dim=32, device="cpu")
    ceilings = record.ceilings
    assert ceilings is not None and ceilings.matmul_tflops_per_s > 0
    for row in record.results:
        assert row.flops_of_ceiling == pytest.approx(
            row.tflops_per_s / ceilings.matmul_tflops_per_s)
        assert row.bandwidth_of_ceiling == pytest.approx(
            row.gbytes_per_s / ceilings.bandwidth_gbytes_per_s)
    back = RunRecord.from_json(record.to_json())
    assert back.ceilings == ceilings
    assert back.result("sdpa").flops_of_ceiling == record.result("sdpa").flops_of_ceiling
    console = Console(record=True, width=200, color_system=None)
    render_compare(record, console)
    text = console.export_text()
    assert "share of this machine's ceilings" in text
    share = record.result("sdpa").flops_of_ceiling
    assert f"({share:.0%})" in text
