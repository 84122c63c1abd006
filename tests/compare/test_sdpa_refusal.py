"""A pinned SDPA backend's refusal on CUDA, explained from PyTorch's own warnings.

The warnings are the ones ``select_sdp_backend`` (aten/src/ATen/native/transformers/cuda/
sdp_utils.cpp) emits, one per line, as Python shows them after the runner's one-line
clean-up: a header per backend, then that backend's failed checks. Pure string handling,
so it runs here; tests/gpu checks the real thing.
"""

from __future__ import annotations

from attnprof.knowledge.sdpa_backends import refusal_reasons, router_reasons
from attnprof.variants import get_variant
from attnprof.workload.problem import Workload

AT = " (Triggered internally at /pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:{}.)"
# sdpa-flash on float32 inputs: the flash section holds the one failed check.
FP32_ON_FLASH = [
    "Memory efficient kernel not used because:" + AT.format(915),
    "Memory Efficient attention has been runtime disabled." + AT.format(826),
    "Flash attention kernel not used because:" + AT.format(917),
    "Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: "
    "float, Key dtype: float, and Value dtype: float instead." + AT.format(102),
    "cuDNN attention kernel not used because:" + AT.format(919),
    "cuDNN attention has been runtime disabled." + AT.format(606),
]
CUDA_REFUSAL = RuntimeError("No available kernel. Aborting execution.")
W = Workload(device="cuda", dtype="float32")


def test_only_the_pinned_backends_own_checks_are_the_reason() -> None:
    reason = get_variant("sdpa-flash").explain_refusal(CUDA_REFUSAL, FP32_ON_FLASH, W)
    assert reason == ("PyTorch refused: Flash attention kernel not used because: Expected "
                      "query, key and value to all be of dtype: {Half, BFloat16}. Got Query "
                      "dtype: float, Key dtype: float, and Value dtype: float instead.")


def test_every_failed_check_of_the_pinned_backend_is_kept() -> None:
    warnings = [
        "Memory efficient kernel not used because:",
        "Mem efficient attention requires last dimension of inputs to be divisible by 8. "
        "Got Query.size(-1): 12, Key.size(-1): 12, Value.size(-1): 12 instead.",
        "Both fused kernels do not support non-null attn_mask.",
        "Flash attention kernel not used because:",
        "Flash attention has been runtime disabled.",
    ]
    assert refusal_reasons("EFFICIENT_ATTENTION", warnings) == [
        "Memory efficient kernel not used because: Mem efficient attention requires last "
        "dimension of inputs to be divisible by 8. Got Query.size(-1): 12, Key.size(-1): 12, "
        "Value.size(-1): 12 instead.",
        "Both fused kernels do not support non-null attn_mask.",
    ]


def test_cudnn_header_is_matched_in_either_spelling() -> None:
    for name in ("cuDNN", "CuDNN"):
        warnings = ["Flash attention kernel not used because:",
                    "Flash attention has been runtime disabled.",
                    f"{name} attention kernel not used because:",
                    "head_dim should be no more than 128"]
        assert refusal_reasons("CUDNN_ATTENTION", warnings) == [
            f"{name} attention kernel not used because: head_dim should be no more than 128"]


def test_a_section_emptied_by_deduplication_falls_back_to_the_other_warnings() -> None:
    # Python shows a repeated warning once, so a reason two backends share can vanish from
    # the later section; then whatever PyTorch did say, bar headers and the pin's effects.
    warnings = ["Memory efficient kernel not used because:",
                "Memory Efficient attention has been runtime disabled.",
                "Flash attention kernel not used because:",
                "All tensors need to be on cuda device. Got query on device: cpu"]
    assert refusal_reasons("CUDNN_ATTENTION", warnings) == [
        "All tensors need to be on cuda device. Got query on device: cpu"]


def test_a_silent_refusal_still_says_what_the_backend_needs() -> None:
    cpu = RuntimeError("No viable backend for scaled_dot_product_attention was found.")
    reason = get_variant("sdpa-cudnn").explain_refusal(cpu, [], W.replace(device="cpu"))
    assert reason and reason.startswith("PyTorch refused without a reason on cpu: ")


def test_a_cut_short_location_suffix_is_dropped() -> None:
    warnings = ["Flash attention kernel not used because:",
                "Flash attention requires q,k,v to have the same last dimension (Triggered "
                "internally at /pytorch/aten/src/ATen/nat…"]
    assert refusal_reasons("FLASH_ATTENTION", warnings) == [
        "Flash attention kernel not used because: Flash attention requires q,k,v to have "
        "the same last dimension"]


def test_the_routers_reasons_are_one_line_per_refused_backend() -> None:
    # Auto dispatch that fell back to math: each fused backend's own checks, headers kept
    # with them; "runtime disabled" sections and unrelated warnings left out.
    warnings = [
        "some unrelated deprecation",
        "Memory efficient kernel not used because:",
        "Both fused kernels require query, key and value to have the same dtype",
        "Flash attention kernel not used because:",
        "Flash attention only supports head dimension <= 256 (Triggered internally at "
        "/pytorch/aten/src/ATen/native/transformers/cuda/sdp_utils.cpp:123.)",
        "Flash attention requires q, k, v to have the same dtype",
        "cuDNN attention kernel not used because:",
        "cuDNN attention has been runtime disabled.",
    ]
    assert router_reasons(warnings) == [
        "Memory efficient kernel not used because: Both fused kernels require query, key and "
        "value to have the same dtype",
        "Flash attention kernel not used because: Flash attention only supports head "
        "dimension <= 256; Flash attention requires q, k, v to have the same dtype",
    ]
