"""Every ``--mask`` on the variants that take masks: each row ``ok`` against a float64
reference applying the same mask (or ``unsupported`` with the reason), FLOPs counting the
pairs the mask admits, checked against a brute-force count of the mask tensor."""

from __future__ import annotations

import msgspec
import pytest

from attnprof.run.compare import compare
from attnprof.variants.masks import build_mask
from attnprof.workload import costs
from attnprof.workload.masking import MASKS, admitted_pairs
from attnprof.workload.problem import Workload

TINY = Workload(batch=2, heads=4, kv_heads=2, seq=48, head_dim=16, window=12,
                mask_density=0.3, lengths="8..48")


def _workload(mask: str) -> Workload:
    return TINY.replace(mask=mask, lengths=TINY.lengths if mask in ("padding", "document")
                        else None).validate()


@pytest.mark.parametrize("mask", MASKS)
def test_admitted_pairs_are_a_brute_force_count_of_the_mask(mask: str) -> None:
    workload = _workload(mask)
    window = workload.window if mask == "window" else None
    allowed = build_mask(workload, window).allowed
    if allowed is None:
        counted = workload.batch * workload.q_len * workload.k_len
    else:
        counted = int(allowed.expand(workload.batch, 1, -1, -1).sum())
    if mask == "causal":  # FlashAttention's convention: half the dense product
        assert admitted_pairs(workload, None) == workload.batch * workload.seq ** 2 / 2
        assert counted == workload.batch * workload.seq * (workload.seq + 1) // 2
    else:
        assert admitted_pairs(workload, window) == counted
    assert costs.forward_flops(workload, window) == pytest.approx(
        4 * workload.heads * workload.head_dim * admitted_pairs(workload, window))


def test_plain_masks_keep_the_flash_attention_convention() -> None:
    assert costs.flops_convention(_workload("causal")) == costs.FLOPS_CONVENTION
    assert "admitted" in costs.flops_convention(_workload("padding"))


def test_a_bool_mask_admits_its_density_in_every_row_and_is_seeded() -> None:
    workload = _workload("bool")
    allowed = build_mask(workload, None).allowed
    assert allowed is not None
    assert (allowed.sum(-1) == round(0.3 * workload.seq)).all()
    assert (build_mask(workload, None).allowed == allowed).all()
    other = build_mask(workload.replace(mask_seed=1), None).allowed
    assert not (other == allowed).all()


@pytest.mark.parametrize("mask", MASKS)
def test_every_mask_runs_naive_sdpa_flex_and_a_user_function(mask: str, fast_settings,
                                                             user_file) -> None:
    workload = _workload(mask)
    names = ["naive", "sdpa", "flex-eager", "mha-module", "gqa-repeat-kv",
             "sliding-window", f"{user_file}:my_attention"]
    # one timing round: the rows' statuses and errors are what is checked, not latency
    settings = msgspec.structs.replace(
        fast_settings, plan=msgspec.structs.replace(fast_settings.plan, rounds=1))
    record = compare(workload, names, settings=settings)
    window = workload.window if mask == "window" else None
    for row in record.results:
        if row.status == "unsupported":
            assert row.reason, row
            continue
        assert row.status == "ok", (row.variant, row.status, row.reason)
        assert row.max_abs_error is not None and row.max_abs_error <= 1e-4, row.variant
        own = workload.window if row.variant == "sliding-window" else window
        assert row.flops == costs.forward_flops(workload, own)
    # which SDPA backend ran for this mask is on the row (CPU: flash takes every mask)
    assert record.result("sdpa").sdpa_backend is not None
    statuses = {r.variant: r.status for r in record.results}
    assert statuses["naive"] == statuses["sdpa"] == statuses["flex-eager"] == "ok"
    assert statuses[f"{user_file}:my_attention"] == "ok"
    if mask not in ("none", "causal", "window"):
        assert statuses["sliding-window"] == "unsupported"


def test_a_row_with_no_key_is_zero_in_the_reference_and_says_so(fast_settings) -> None:
    workload = TINY.replace(mask="bool", mask_density=0.0, lengths=None).validate()
    record = compare(workload, ["naive", "sdpa"], settings=fast_settings)
    naive, sdpa = record.result("naive"), record.result("sdpa")
    assert sdpa.status == "ok" and sdpa.max_abs_error == 0.0
    # hand-written softmax over -inf everywhere is NaN: a loud "wrong", never silent
    assert naive.status == "wrong" and "NaN" in naive.reason


def test_a_pinned_backend_refusing_a_mask_says_so_from_pytorchs_warnings() -> None:
    from attnprof.variants import get_variant

    warnings = ["Memory efficient kernel not used because:",
                "Memory Efficient attention has been runtime disabled.",
                "Flash attention kernel not used because:",
                "Flash Attention does not support non-null attn_mask.",
                "cuDNN attention kernel not used because:",
                "cuDNN attention has been runtime disabled."]
    workload = Workload(device="cuda", dtype="bfloat16", mask="padding")
    reason = get_variant("sdpa-flash").explain_refusal(
        RuntimeError("No available kernel. Aborting execution."), warnings, workload)
    assert reason == ("PyTorch refused: Flash attention kernel not used because: Flash "
                      "Attention does not support non-null attn_mask.")


def test_a_pinned_backend_that_cannot_run_here_is_a_row_with_the_reason(fast_settings
                                                                       ) -> None:
    record = compare(_workload("bias"), ["sdpa-efficient", "sdpa-math"],
                     settings=fast_settings)
    assert record.result("sdpa-math").status == "ok"
    assert record.result("sdpa-math").sdpa_backend == "math"
    refused = record.result("sdpa-efficient")
    assert refused.status == "unsupported" and "CUDA" in refused.reason
