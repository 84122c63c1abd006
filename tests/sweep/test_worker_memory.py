"""``--worker-memory`` bounds the variants, not attnprof: the ceilings, the inputs and the
float64 reference are in place before a worker's cap is set, and the reference never
holds the whole score matrix."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.measure.accuracy import REFERENCE_BLOCK_BYTES, reference_output
from attnprof.measure.inputs import make_inputs
from attnprof.measure.memory import profile_step
from attnprof.record.sweep import SweepRecord
from attnprof.workload.problem import Workload

MiB = 1 << 20


def test_the_reference_holds_blocks_not_the_whole_score_matrix() -> None:
    # float64 scores of one batch entry: 8 · 2048² · 8 B = 256 MiB; the output is 2 MiB.
    workload = Workload(batch=1, heads=8, kv_heads=2, seq=2048, head_dim=16).validate()
    inputs = make_inputs(workload)
    peak = profile_step(lambda: reference_output(inputs, workload, None), "cpu").peak_bytes
    out = 1 * 8 * 2048 * 16 * 8
    assert peak <= out + 4 * REFERENCE_BLOCK_BYTES, peak


@pytest.mark.slow
def test_a_cap_below_attnprofs_own_memory_bounds_only_the_variants(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The ceilings copy 2 × 256 MiB and the whole-matrix reference needed 96 MiB here; the
    # variants peak at about 50 MiB (naive) and 1 MiB (flash). Under a 200 MiB cap both run.
    path = tmp_path / "sweep.json"
    argv = ["sweep", "--seq", "512,1024", "--batch", "1", "--heads", "4", "--kv-heads", "4",
            "--head-dim", "64", "--variants", "naive,sdpa-flash", "--min-time", "0.05",
            "--rounds", "1", "--worker-memory", "200MiB", "--json", str(path)]
    assert main(argv) == 0, capsys.readouterr().err
    record = SweepRecord.load(path)
    assert record.limits is not None and record.limits.worker_memory_bytes == 200 * MiB
    assert record.settings.cpu_allocator == "system"  # under a cap: see sweep_args
    for point in record.ordered_points():
        assert point.ceilings is not None  # measured, outside the cap
        for row in point.results:
            assert row.status == "ok", row.reason
            assert row.peak_memory_bytes is not None and row.peak_memory_bytes < 200 * MiB
            assert row.within_tolerance


def test_a_reference_past_the_time_limit_is_said_not_blamed_on_a_variant(
        tmp_path: Path) -> None:
    from attnprof.run.compare import compare
    from attnprof.workload.settings import Settings, TimingPlan

    path = tmp_path / "quick.py"
    path.write_text("import torch\n\ndef zeros(q, k, v, **kwargs):\n"
                    "    return torch.zeros_like(q)\n")
    # The float64 reference at this shape is ~70 GFLOP: seconds even on a quiet machine,
    # far past a quarter second; the variant's own phases take microseconds.
    settings = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.01, min_samples=3,
                                        max_samples=5, min_warmup_calls=1, rounds=1),
                        measure_ceilings=False, measure_memory=False, variant_timeout_s=0.25)
    workload = Workload(batch=2, heads=8, kv_heads=8, seq=4096, head_dim=64)
    (row,) = compare(workload, [f"{path}:zeros"], settings=settings).results
    assert row.status == "ok", row.reason
    assert row.max_abs_error is None and row.within_tolerance is None
    assert ("accuracy not checked: the float64 reference did not finish within 0.25 s "
            "(--variant-timeout)") in row.notes
