"""CUDA-only (skipped without a device): every mask through SDPA and flex in bf16 against
the float64 reference, which backend SDPA chose per mask and why the pinned fused ones
refused, and the packing variants (varlen included, where flash-attn is installed) beside
a padded batch. Run by scripts/gpu_check.sh's GPU tests step."""

from __future__ import annotations

import pytest

from attnprof.run.compare import compare
from attnprof.workload.masking import MASKS
from attnprof.workload.problem import Workload
from attnprof.workload.settings import Settings, TimingPlan

pytestmark = pytest.mark.gpu

FAST = Settings(plan=TimingPlan(warmup_s=0.0, min_time_s=0.02, min_samples=3,
                                max_samples=5, min_warmup_calls=1),
                measure_ceilings=False)
BASE = Workload(batch=2, heads=8, kv_heads=2, seq=256, head_dim=64, dtype="bfloat16",
                device="cuda", window=64)


@pytest.mark.parametrize("mask", MASKS)
def test_every_mask_on_cuda_runs_or_says_why(mask: str) -> None:
    workload = BASE.replace(mask=mask, lengths="32..256" if mask in ("padding", "document")
                            else None).validate()
    record = compare(workload, ["sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-math",
                                "flex-eager", "naive"], settings=FAST)
    rows = {r.variant: r for r in record.results}
    for row in rows.values():
        assert row.status in ("ok", "unsupported"), (row.variant, row.status, row.reason)
        assert row.status == "ok" or row.reason
    assert rows["sdpa"].status == rows["sdpa-math"].status == "ok"
    assert rows["sdpa"].sdpa_backend is not None
    if mask not in ("none", "causal"):  # an attn_mask: flash takes none, says why
        flash = rows["sdpa-flash"]
        assert flash.status == "unsupported" and flash.reason.startswith("PyTorch refused")
        assert rows["sdpa"].sdpa_backend != "flash"


def test_packing_beside_a_padded_batch_on_cuda() -> None:
    workload = BASE.replace(mask="padding", lengths="32..256").validate()
    record = compare(workload, ["sdpa", "sdpa-unpadded", "sdpa-jagged", "flex-document",
                                "varlen"], settings=FAST)
    rows = {r.variant: r for r in record.results}
    assert rows["sdpa"].status == rows["sdpa-unpadded"].status == "ok"
    assert rows["flex-document"].status == "ok", rows["flex-document"].reason
    assert rows["varlen"].status in ("ok", "unsupported")
    assert record.padding_waste is not None and record.padding_waste.time_ms is not None
