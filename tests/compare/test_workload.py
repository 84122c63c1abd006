"""Workload validation: every impossible combination is one clear UsageError."""

from __future__ import annotations

import pytest

from attnprof.errors import UsageError
from attnprof.measure.device import check_against_device, check_device
from attnprof.workload.problem import Workload, canonical_dtype, default_workload


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"heads": 8, "kv_heads": 3},
         "--kv-heads 3 does not divide --heads 8; use one of 1, 2, 4, 8"),
        ({"seq": 0}, "--seq must be a positive integer, got 0"),
        ({"batch": -1}, "--batch must be a positive integer, got -1"),
        ({"heads": 0}, "--heads must be a positive integer"),
        ({"head_dim": 0}, "--head-dim must be a positive integer"),
        ({"kv_heads": 0}, "--kv-heads must be a positive integer"),
        ({"kv_seq": 0}, "--kv-seq must be a positive integer"),
        ({"window": 0}, "--window must be a positive integer"),
        ({"dtype": "fp8"}, "unknown dtype 'fp8'"),
        ({"mode": "train"}, "unknown mode 'train'"),
        ({"head_dim": 1024}, "--head-dim 1024 is larger than any attention kernel"),
        ({"seq": 100, "kv_seq": 200}, "causal attention with --seq 100 != --kv-seq 200"),
    ],
)
def test_invalid_workloads_name_the_value_and_the_fix(changes: dict, needle: str) -> None:
    with pytest.raises(UsageError) as info:
        Workload(**changes).validate()
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


def test_valid_workload_is_normalised() -> None:
    w = Workload(dtype="bf16", device=" CPU ", kv_heads=2).validate()
    assert w.dtype == "bfloat16"
    assert w.device == "cpu"
    assert (w.num_kv_heads, w.groups) == (2, 4)


def test_non_causal_cross_attention_lengths_are_allowed() -> None:
    w = Workload(seq=64, kv_seq=128, causal=False).validate()
    assert (w.q_len, w.k_len, w.is_causal) == (64, 128, False)


def test_decode_mode_has_one_query_over_the_cache() -> None:
    w = Workload(seq=512, mode="decode").validate()
    assert (w.q_len, w.k_len) == (1, 512)
    assert w.is_causal is False  # a single last-position query sees the whole cache
    w = Workload(seq=64, kv_seq=4096, mode="decode").validate()
    assert w.k_len == 4096


@pytest.mark.parametrize(("alias", "name"), [("bf16", "bfloat16"), ("FP16", "float16"),
                                             ("fp32", "float32"), ("double", "float64")])
def test_dtype_aliases(alias: str, name: str) -> None:
    assert canonical_dtype(alias) == name


def test_dict_round_trip_keeps_every_field() -> None:
    w = Workload(batch=3, heads=4, kv_heads=2, seq=32, head_dim=16, mode="decode",
                 dtype="float16", window=8).validate()
    assert Workload.from_dict(w.to_dict()).validate() == w.replace(kv_heads=2, kv_seq=32)


def test_describe_is_one_readable_line() -> None:
    text = Workload(kv_heads=2).validate().describe()
    assert text == "B=2 H=8 (KV 2) S=512 D=64 float32 cpu causal forward"


def test_cpu_default_is_small_and_gpu_default_is_realistic() -> None:
    cpu = default_workload("cpu").validate()
    assert cpu.dtype == "float32" and cpu.seq <= 1024
    assert (cpu.heads, cpu.num_kv_heads) == (8, 2)  # grouped-query, 4:1
    gpu = default_workload("cuda").validate()
    assert gpu.dtype == "bfloat16" and 1024 <= gpu.seq <= 4096 and gpu.batch == 8
    assert (gpu.heads, gpu.num_kv_heads) == (16, 4)


@pytest.mark.parametrize(("fields", "kv"), [
    ({"heads": 16}, 4),                 # the default 4:1 grouping follows --heads
    ({"heads": 6}, 6),                  # not divisible by 4: plain multi-head
    ({"heads": 16, "kv_heads": 16}, 16),  # the user's own choice wins
    ({"heads": 16, "kv_heads": 1}, 1),
])
def test_default_grouping_follows_the_users_heads(fields: dict, kv: int) -> None:
    assert default_workload("cpu", **fields).validate().num_kv_heads == kv


def test_absent_cuda_device_is_a_usage_error() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(UsageError, match=r"no CUDA device is available.*use --device cpu"):
        check_device("cuda")


@pytest.mark.parametrize("device", ["cuda:", "cuda:x", "cuda:-1"])
def test_malformed_cuda_index_is_a_usage_error(device: str) -> None:
    # Checked before CUDA's presence: torch.device() would raise a bare RuntimeError.
    with pytest.raises(UsageError, match=rf"--device {device}: a CUDA device is cuda or cuda:N"):
        check_device(device)


@pytest.mark.parametrize("device", ["tpu", "vulkan:0"])
def test_unknown_device_is_a_usage_error(device: str) -> None:
    with pytest.raises(UsageError, match=f"unknown device '{device}'"):
        check_device(device)


def test_memory_beyond_the_device_says_how_much_is_needed() -> None:
    w = Workload(batch=100_000, seq=100_000).validate()
    with pytest.raises(UsageError, match=r"needs about [\d.]+ GiB .* but cpu has [\d.]+ GiB"):
        check_against_device(w)
