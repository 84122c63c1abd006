"""The kernel-name corpus: real names, each with what an expert reads off it, decoded.

``tests/fixtures/kernel_names.json`` holds at least 150 real kernel names from the public
traces and from public code, issues and profiler reports (FlashAttention 2/3/4, xformers,
cuDNN, cuBLAS/cuBLASLt, CUTLASS, Triton/Inductor, ATen, ROCm Tensile/hipBLASLt/CK/AITER,
NCCL/RCCL), each with its source, and the family, tensor-core use and dtype a reader would
state (``null``: the name does not say, or it does not apply). The decoder must agree on all
three for at least 95% of them; the misses are printed, so a regression says which.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from attnprof.knowledge.kernel_names import DTYPES, FAMILIES, decode_kernel_name

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "kernel_names.json"
FIELDS = ("family", "tensor_cores", "dtype")


def _corpus() -> list[dict[str, Any]]:
    kernels: list[dict[str, Any]] = json.loads(CORPUS.read_text())["kernels"]
    return kernels


def _misses(kernels: list[dict[str, Any]]) -> list[str]:
    out = []
    for k in kernels:
        decoded = decode_kernel_name(k["name"])
        wrong = {f: (getattr(decoded, f), k[f]) for f in FIELDS if getattr(decoded, f) != k[f]}
        if wrong:
            got = ", ".join(f"{f} {g!r} (expected {e!r})" for f, (g, e) in wrong.items())
            out.append(f"{k['name'][:110]}: {got}")
    return out


def test_the_corpus_is_real_sourced_and_broad() -> None:
    kernels = _corpus()
    assert len(kernels) >= 150
    assert len({k["name"] for k in kernels}) == len(kernels)
    for k in kernels:
        assert k["source"] and set(FIELDS) <= k.keys(), k["name"]
        assert k["family"] in FAMILIES and (k["dtype"] is None or k["dtype"] in DTYPES)
        assert k["tensor_cores"] in (True, False, None)
    # Every library family the issue names is represented.
    text = " ".join(f"{k['name']} {k['source']}" for k in kernels)
    for needle in ("pytorch_flash::", "FlashAttnBwdSm90", "FlashAttentionForwardSm100",
                   "fmha_cutlassF", "cudnn_generated_fort_native_sdpa", "sm90_xmma_gemm",
                   "nvjet", "cutlass_80_tensorop", "cutlass3x_sm90", "triton_per_fused",
                   "triton_red_fused", "at::native::", "Cijk_", "ck::kernel_gemm",
                   "ck_tile::", "ncclDevKernel_", "ncclKernel_", "RCCL"):
        assert needle in text, needle
    families = Counter(k["family"] for k in kernels)
    assert sum(families[f] for f in ("flash", "mem_efficient", "cudnn_attention")) >= 25


def test_the_corpus_decodes_at_least_95_percent_correctly(
        capsys: pytest.CaptureFixture[str]) -> None:
    kernels = _corpus()
    misses = _misses(kernels)
    accuracy = 1 - len(misses) / len(kernels)
    with capsys.disabled():
        print(f"\nkernel-name corpus: {len(kernels) - len(misses)}/{len(kernels)} decoded "
              f"correctly ({accuracy:.1%}); misses:")
        for line in misses or ["(none)"]:
            print(f"  {line}")
    assert accuracy >= 0.95, misses


def test_hopper_and_later_attention_uses_tensor_cores() -> None:
    for k in _corpus():
        decoded = decode_kernel_name(k["name"])
        if decoded.is_attention and decoded.arch in ("sm90", "sm100"):
            assert decoded.tensor_cores is True, k["name"]
