"""FLOP and byte formulas against values computed by hand."""

from __future__ import annotations

import pytest

from attnprof.workload import costs
from attnprof.workload.problem import Workload


def test_dense_forward_flops() -> None:
    w = Workload(batch=2, heads=8, seq=512, head_dim=64, causal=False).validate()
    # 4 · B · H · Sq · Sk · D = 4 · 2 · 8 · 512 · 512 · 64
    assert costs.forward_flops(w) == 1_073_741_824


def test_causal_is_half_of_dense_as_flashattention_counts() -> None:
    w = Workload(batch=2, heads=8, seq=512, head_dim=64, causal=True).validate()
    assert costs.forward_flops(w) == 536_870_912


def test_backward_is_two_and_a_half_forward() -> None:
    w = Workload(batch=1, heads=2, seq=16, head_dim=8, causal=False,
                 mode="forward+backward").validate()
    fwd = 4 * 1 * 2 * 16 * 16 * 8
    assert costs.step_flops(w) == fwd * 3.5 == 57_344


def test_gqa_counts_query_heads_not_kv_heads() -> None:
    mha = Workload(heads=8, seq=64, head_dim=16).validate()
    gqa = mha.replace(kv_heads=2).validate()
    assert costs.forward_flops(gqa) == costs.forward_flops(mha)
    # ... but K/V bytes shrink by the group factor
    assert costs.tensor_bytes(gqa)["k"] * 4 == costs.tensor_bytes(mha)["k"]


def test_decode_is_one_query_over_the_cache() -> None:
    w = Workload(batch=4, heads=8, seq=1000, head_dim=128, mode="decode").validate()
    assert costs.forward_flops(w) == 4 * 4 * 8 * 1 * 1000 * 128


@pytest.mark.parametrize(
    ("q_len", "k_len", "causal", "window", "pairs"),
    [
        (4, 4, True, 2, 1 + 2 + 2 + 2),          # causal window 2
        (4, 4, False, 2, 2 + 3 + 3 + 2),         # |i - j| < 2
        (4, 4, True, 10, 1 + 2 + 3 + 4),         # window wider than the sequence
        (1, 8, False, 3, 3),                     # decode query sees the last 3 keys
        (4, 4, True, None, 8.0),                 # plain causal: exactly half
        (3, 5, False, None, 15.0),
    ],
)
def test_attended_pairs(q_len: int, k_len: int, causal: bool, window: int | None,
                        pairs: float) -> None:
    assert costs.attended_pairs(q_len, k_len, causal, window) == pairs


def test_step_bytes_floor() -> None:
    w = Workload(batch=1, heads=2, kv_heads=1, seq=4, head_dim=8, dtype="bf16").validate()
    q = 1 * 2 * 4 * 8 * 2
    kv = 1 * 1 * 4 * 8 * 2
    assert costs.step_bytes(w) == q + kv + kv + q


def test_rates_guard_against_missing_values() -> None:
    assert costs.achieved_rate(10.0, 2.0) == 5.0
    assert costs.achieved_rate(None, 2.0) is None
    assert costs.achieved_rate(10.0, 0.0) is None


def test_convention_is_named() -> None:
    assert "4·B·H·Sq·Sk·D" in costs.FLOPS_CONVENTION
    assert "causal ×0.5" in costs.FLOPS_CONVENTION
    assert "bwd 2.5×fwd" in costs.FLOPS_CONVENTION
