"""A roofline bound must be a bound: on this machine, from the ceilings it measured, no
variant compare runs beats it (issue 34). A violation is a defect in the FLOPs, the
traffic model or the ceilings, never a tolerance: the fastest sample is checked, not the
median, and nothing is scaled."""

from __future__ import annotations

import pytest

from attnprof.analysis.projection import bound_of, machine_target
from attnprof.run.compare import compare
from attnprof.workload.settings import Settings, TimingPlan

#: Few samples: the bound has to hold for every call, the fastest included. One intra-op
#: thread, as the CLI times CPU variants (compare --threads): the ceilings are measured on
#: the same threads as the variants.
_SETTINGS = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                     max_samples=5, min_warmup_calls=1, rounds=1),
                     check_accuracy=False, threads=1)


@pytest.mark.slow  # six comparisons with their ceilings: ~20 s on a busy 2-core machine
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("seq", [256, 1024, 4096])
def test_no_variant_runs_faster_than_its_bound_on_this_machine(dtype: str, seq: int) -> None:
    record = compare(variants=["naive", "sdpa"], settings=_SETTINGS, batch=1,
                     heads=1 if seq == 4096 else 2, seq=seq, head_dim=64, dtype=dtype,
                     device="cpu")
    assert record.ceilings is not None
    here = machine_target(record.ceilings)
    for row in record.results:
        assert row.status == "ok" and row.latency_ms is not None, row.reason
        # the traffic model's figure, not the I/O floor: it is what the bound divides
        assert row.traffic_bytes is not None and row.traffic_bytes >= (row.bytes_moved or 0)
        bound = bound_of(row.flops, row.traffic_bytes, here)
        assert bound is not None
        fastest_s = row.latency_ms.min / 1e3
        assert fastest_s >= bound.seconds, (
            f"{row.variant} {dtype} seq {seq}: fastest call {fastest_s * 1e3:.3f} ms beats "
            f"its bound {bound.seconds * 1e3:.3f} ms (compute {bound.compute_s * 1e3:.3f}, "
            f"memory {bound.memory_s * 1e3:.3f}; ceilings {record.ceilings})")
