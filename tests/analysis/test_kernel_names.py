"""Kernel-name decoding, tested on real kernel names only.

Three sources: every kernel/memcpy/memset name in the public traces (A100, V100, MI250 ROCm,
Triton, NCCL; read from examples/traces), the names the product
brief records from A100/H100 runs, and names as printed in public profiler reports (H100,
B200, nsys tables) for the Hopper-era kernels the public traces predate.
"""

from __future__ import annotations

import gzip
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnprof.knowledge.kernel_names import (
    ATTENTION_FAMILIES,
    DTYPES,
    FAMILIES,
    KernelName,
    decode_kernel_name,
)

PUBLIC_TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
_DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})


class _Event(msgspec.Struct):
    name: str = ""
    cat: str = ""


class _Device(msgspec.Struct):
    computeMajor: int = 0
    computeMinor: int = 0
    name: str = ""


class _Trace(msgspec.Struct):
    # Only the fields these tests read; msgspec skips the rest without building it.
    traceEvents: list[_Event] = []
    deviceProperties: list[_Device] = []


@lru_cache(maxsize=1)
def _load_traces() -> dict[str, tuple[frozenset[str], tuple[_Device, ...]]]:
    """Trace file name -> (distinct device-side event names, devices)."""
    out: dict[str, tuple[frozenset[str], tuple[_Device, ...]]] = {}
    for path in sorted(PUBLIC_TRACES.glob("*.json.gz")):
        with gzip.open(path, "rb") as f:
            trace = msgspec.json.decode(f.read(), type=_Trace)
        names = frozenset(e.name for e in trace.traceEvents if e.cat in _DEVICE_CATS)
        out[path.name] = (names, tuple(trace.deviceProperties))
    return out


@pytest.fixture(scope="module")
def traces() -> dict[str, tuple[frozenset[str], tuple[_Device, ...]]]:
    if not PUBLIC_TRACES.is_dir() or not any(PUBLIC_TRACES.glob("*.json.gz")):
        pytest.skip(f"public traces not found at {PUBLIC_TRACES}")
    return _load_traces()


@pytest.fixture(scope="module")
def trace_names(traces: dict[str, tuple[frozenset[str], tuple[_Device, ...]]]) -> frozenset[str]:
    return frozenset().union(*(names for names, _ in traces.values()))


def _check(k: KernelName, expected: dict[str, Any]) -> None:
    got = {field: getattr(k, field) for field in expected}
    assert got == expected, k.raw[:200]


# --- (1) every name in the public traces -------------------------------------------------


def test_public_traces_hold_names(trace_names: frozenset[str]) -> None:
    assert len(trace_names) > 300  # 353 distinct names in the ten traces


def test_every_public_trace_name_decodes_into_the_vocabulary(trace_names: frozenset[str]) -> None:
    for name in trace_names:
        k = decode_kernel_name(name)
        assert k.raw == name
        assert k.family in FAMILIES
        assert k.dtype is None or k.dtype in DTYPES
        assert k.direction in (None, "forward", "backward")
        assert k.arch is None or re.fullmatch(r"sm\d{2,3}|gfx\w+", k.arch)
        assert k.tile is None or re.fullmatch(r"\d+x\d+", k.tile)
        assert k.short and len(k.short) <= 100
        # The README of the public traces: "None of them contains an attention kernel".
        assert not k.is_attention, name[:200]


_GEMM_LOOKING = re.compile(r"(?i:(?<!fb)gemm|gemv)|^Cijk_|nvjet")  # fbgemm is embeddings


def test_no_gemm_looking_public_name_is_other(trace_names: frozenset[str]) -> None:
    gemm_like = [n for n in trace_names if _GEMM_LOOKING.search(n)]
    assert len(gemm_like) > 100
    stray = [n[:120] for n in gemm_like if decode_kernel_name(n).family not in ("gemm", "conv")]
    assert stray == []


def test_few_public_names_are_other(trace_names: frozenset[str]) -> None:
    other = sorted(n for n in trace_names if decode_kernel_name(n).family == "other")
    # 25 of 353 (7.1%), none of them attention-relevant: cub radix sort/scan, pooling,
    # searchsorted, fbgemm sparse-feature permutes, one cuDNN tensor scale.
    assert len(other) / len(trace_names) < 0.08, [n[:80] for n in other]


def test_decoded_arch_matches_the_device_the_trace_ran_on(
    traces: dict[str, tuple[frozenset[str], tuple[_Device, ...]]],
) -> None:
    checked = 0
    for file, (names, devices) in traces.items():
        if not devices or not names:
            continue
        device = devices[0]
        amd = "AMD" in device.name or "Radeon" in device.name
        for name in names:
            arch = decode_kernel_name(name).arch
            if arch is None:
                continue
            checked += 1
            if amd:
                assert arch.startswith(f"gfx{device.computeMajor}"), (file, name[:120])
            else:
                assert arch == f"sm{device.computeMajor}{device.computeMinor}", (file, name[:120])
    assert checked > 100


# Curated real names from the traces, found by a unique prefix so the file stays readable
# (some are thousands of characters long). Every trace name with the prefix must match.
TRACE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("Cijk_", dict(family="gemm", library="Tensile", dtype="fp32", tensor_cores=True,
                   arch="gfx90a", tile="64x16", direction=None)),
    ("Memcpy HtoD (Pageable -> Device)", dict(family="memcpy", subkind="HtoD", dtype=None,
                                              arch=None, short="Memcpy HtoD (Pageable -> Device)")),
    ("Memset (Device)", dict(family="memset", dtype=None, tensor_cores=None)),
    ("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22"
     "ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS4_52Conv2dWgrad",
     dict(family="conv", library="cuDNN", dtype="tf32", tensor_cores=True, arch=None,
          direction="backward", tile="128x128")),
    ("ampere_gcgemm_64x64_nt", dict(family="gemm", dtype=None, tensor_cores=False, arch="sm80")),
    ("ampere_sgemm_128x64_nn", dict(family="gemm", library="cuBLAS", dtype="fp32",
                                    tensor_cores=False, arch="sm80", tile="128x64", stages=None,
                                    short="cuBLAS GEMM fp32 SIMT 128x64 (sm80)")),
    ("ampere_sgemm_32x32_sliced1x4_tn", dict(family="gemm", dtype="fp32", tile="32x32")),
    ("cudnn_infer_volta_scudnn_128x64_3dconv_fprop_medium_nn_v1",
     dict(family="conv", library="cuDNN", dtype="fp32", tensor_cores=False, arch="sm70",
          direction="forward", tile="128x64")),
    ("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
     dict(family="conv", dtype="fp32", tensor_cores=False, arch="sm80", direction=None)),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(", dict(family="nccl", subkind="AllReduce",
                                                     dtype="fp32", short="NCCL AllReduce fp32")),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(", dict(family="nccl", subkind="SendRecv",
                                                         dtype="int8", direction=None)),
    ("sm80_xmma_dgrad_implicit_gemm_tf32f32", dict(family="conv", dtype="tf32", tensor_cores=True,
                                                   arch="sm80", direction="backward")),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize256x64x32",
     dict(family="conv", dtype="tf32", tensor_cores=True, arch="sm80", direction="forward",
          tile="256x64", stages=3, short="cuDNN conv fwd tf32 tensor-core 256x64 (sm80)")),
    ("sm80_xmma_wgrad_implicit_gemm", dict(family="conv", dtype="tf32", tensor_cores=True,
                                           direction="backward")),
    ("void split_embedding_codegen_forward_weighted_kernel<float",
     dict(family="index", dtype="fp32", direction="forward")),
    ("void bounds_check_indices_kernel<long>", dict(family="index", dtype=None)),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float",
     dict(family="gemm", subkind="gemv", dtype="fp32", tensor_cores=False)),
    ("triton__0d1d2d", dict(family="triton", library="Triton", subkind=None, dtype=None)),
    ("triton_poi_fused_add_cos_sin_0", dict(family="triton", subkind="pointwise",
                                            short="Triton pointwise (add_cos_sin)")),
    ("void (anonymous namespace)::softmax_warp_forward<float",
     dict(family="softmax", dtype="fp32", direction="forward", tensor_cores=None)),
    ("void (anonymous namespace)::softmax_warp_backward<float",
     dict(family="softmax", dtype="fp32", direction="backward", short="softmax bwd fp32")),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float",
     dict(family="copy", dtype="fp32")),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<long",
     dict(family="copy", dtype=None)),
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda",
     dict(family="copy")),
    ("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float",
     dict(family="norm", dtype="fp32", direction="backward")),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float",
     dict(family="norm", dtype="fp32", direction=None)),
    ("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float", dict(family="norm", direction="forward")),
    ("void cudnn::bn_bw_1C11_kernel_new<float", dict(family="norm", direction="backward")),
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float",
     dict(family="other", dtype="fp32", direction="forward",
          short="max_pool_forward_nchw fp32")),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<double",
     dict(family="reduce", dtype="fp64")),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>",
     dict(family="elementwise", dtype="fp32", direction=None, short="elementwise fp32")),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<long>",
     dict(family="elementwise", dtype=None)),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_backward_kernel_cuda",
     dict(family="elementwise", direction="backward")),
    ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float",
     dict(family="elementwise", dtype="fp32")),
    ("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>",
     dict(family="elementwise", dtype="fp32")),
    ("void at::native::index_elementwise_kernel<128, 4, at::native::index_copy_kernel_impl",
     dict(family="index")),
    ("void at::native::_scatter_gather_elementwise_kernel", dict(family="index")),
    ("void at::native::(anonymous namespace)::indexSelectLargeIndex<float",
     dict(family="index", dtype="fp32")),
    ("void cub::DeviceRadixSortOnesweepKernel", dict(family="other")),
    ("void fbgemm_gpu::permute_2D_data_kernel<true, int, int, float>", dict(family="other")),
    ("void cublasLt::splitKreduce_kernel", dict(family="gemm", library="cuBLAS",
                                                subkind="splitk_reduce", dtype="fp32")),
    ("void epilogue::impl::globalKernel<float", dict(family="gemm", subkind="epilogue")),
    ("void magma_sgemmEx_kernel<float", dict(family="gemm", subkind=None, dtype="fp32",
                                             tensor_cores=False)),
    ("void cudnn::winograd_nonfused::winogradForwardData4x4<float",
     dict(family="conv", dtype="fp32", direction="forward")),
    ("void cudnn::ops::nchwToNhwcKernel<float", dict(family="copy", dtype="fp32")),
    ("void fft2d_r2c_32x32<float", dict(family="conv", library="cuDNN", dtype="fp32",
                                        tile="32x32")),
    ("void wgrad_alg0_engine<float", dict(family="conv", dtype="fp32", direction="backward")),
    ("void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>",
     dict(family="gemm", library="CUTLASS", dtype="fp32", tensor_cores=False, arch="sm80",
          tile="128x32", stages=5)),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_nn_align4>",
     dict(family="gemm", library="CUTLASS", dtype="tf32", tensor_cores=True, arch="sm80",
          tile="256x128", stages=3, short="CUTLASS GEMM tf32 tensor-core 256x128 (sm80)")),
    ("void cutlass_cudnn_infer::Kernel<cutlass_tensorop_s1688fprop_optimized_tf32_128x128_32x4",
     dict(family="conv", library="cuDNN", dtype="tf32", tensor_cores=True, arch=None,
          direction="forward", tile="128x128", stages=4)),
    ("void cutlass_cudnn_train::Kernel<cutlass_tensorop_s1688wgrad_optimized_tf32_256x64_16x4",
     dict(family="conv", direction="backward", tile="256x64")),
    ("volta_sgemm_128x64_nn", dict(family="gemm", dtype="fp32", tensor_cores=False, arch="sm70",
                                   tile="128x64", short="cuBLAS GEMM fp32 SIMT 128x64 (sm70)")),
]  # fmt: skip


@pytest.mark.parametrize(("prefix", "expected"), TRACE_CASES, ids=[p[:48] for p, _ in TRACE_CASES])
def test_curated_public_trace_names(
    trace_names: frozenset[str], prefix: str, expected: dict[str, Any]
) -> None:
    matches = [n for n in trace_names if n.startswith(prefix)]
    assert matches, f"no trace kernel name starts with {prefix!r}"
    for name in matches:
        _check(decode_kernel_name(name), expected)


# --- (2) names from the product brief (seen on an A100/H100) ---------------------------------

_NONE = dict(library=None, subkind=None, direction=None, dtype=None, tensor_cores=None,
             arch=None, tile=None, stages=None, head_dim=None, warps=None)  # fmt: skip

BRIEF_CASES: list[tuple[str, dict[str, Any]]] = [
    ("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 64, 4, cutlass::bfloat16_t> >, true, "
     "false, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
     dict(_NONE, family="flash", library="FlashAttention", direction="forward", dtype="bf16",
          tensor_cores=True, tile="128x64", head_dim=64, warps=4, short="flash fwd bf16 hd64")),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
     "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
     dict(_NONE, family="mem_efficient", library="xformers", direction="forward", dtype="bf16",
          tensor_cores=True, arch="sm80", tile="64x64", head_dim=64,
          short="mem-efficient fwd bf16 hd64 (sm80)")),
    ("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_3_64x64x64_4x1x1_kernel0_0",
     dict(_NONE, family="cudnn_attention", library="cuDNN", direction="forward", dtype="fp16",
          tensor_cores=True, arch="sm80", tile="64x64",
          short="cuDNN attention fwd fp16 (sm80)")),
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn",
     dict(_NONE, family="gemm", library="cuBLAS", dtype="bf16", tensor_cores=True, arch="sm80",
          tile="128x64", stages=4, short="cuBLAS GEMM bf16 tensor-core 128x64 (sm80)")),
    ("ampere_sgemm_128x64_tn",
     dict(_NONE, family="gemm", library="cuBLAS", dtype="fp32", tensor_cores=False, arch="sm80",
          tile="128x64", short="cuBLAS GEMM fp32 SIMT 128x64 (sm80)")),
    ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
     "tensor16x8x16_kernel",
     dict(_NONE, family="gemm", library="cuBLAS", dtype="bf16", tensor_cores=True, arch="sm80",
          tile="128x128", stages=4, short="cuBLAS GEMM bf16 tensor-core 128x128 (sm80)")),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
     dict(_NONE, family="softmax", direction="forward", dtype="fp32", short="softmax fwd fp32")),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, "
     "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::BFloat16>, "
     "at::detail::Array<char*, 1>)",
     dict(_NONE, family="elementwise", dtype="bf16", short="elementwise bf16")),
    ("Memcpy DtoD (Device -> Device)",
     dict(_NONE, family="memcpy", subkind="DtoD", short="Memcpy DtoD (Device -> Device)")),
    ("triton_tem_fused_0",
     dict(_NONE, family="triton", library="Triton", subkind="template", short="Triton template")),
    ("aten::_scaled_dot_product_flash_attention_for_cpu",
     dict(_NONE, family="cpu_flash", library="PyTorch", direction="forward",
          short="CPU flash fwd")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "expected"), BRIEF_CASES, ids=[n[:40] for n, _ in BRIEF_CASES])
def test_brief_names(name: str, expected: dict[str, Any]) -> None:
    _check(decode_kernel_name(name), expected)


def test_brief_attention_names_are_attention() -> None:
    attention = {n for n, e in BRIEF_CASES if e["family"] in ATTENTION_FAMILIES}
    assert len(attention) == 4
    assert all(decode_kernel_name(n).is_attention for n in attention)
    assert not any(decode_kernel_name(n).is_attention for n, _ in BRIEF_CASES if n not in attention)


# --- (3) Hopper/Blackwell-era names as printed in public profiler reports ----------------------

REPORT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<256, 64, 64, 4, false, false, "
     "cutlass::bfloat16_t, Flash_kernel_traits<256, 64, 64, 4, cutlass::bfloat16_t> >, true, "
     "false, false, false, true, false, false, false>(flash::Flash_fwd_params)",
     dict(family="flash", subkind="splitkv", dtype="bf16", head_dim=256, tile="64x64", warps=4,
          direction="forward")),
    # nsys spells template ints as "(int)128".
    ("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<(int)128, (int)64, (int)128, (int)4, "
     "(bool)0, (bool)0, cutlass::half_t, Flash_kernel_traits<(int)128, (int)64, (int)128, (int)4, "
     "cutlass::half_t>>, (bool)0, (bool)0, (bool)0, (bool)0, (bool)1, (bool)0, (bool)0, (bool)0>"
     "(Flash_fwd_params)",
     dict(family="flash", dtype="fp16", head_dim=128, tile="64x128", warps=4)),
    ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
     "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<"
     "cute::C<128>, cute::C<176>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::"
     "Sm90, false, false, false, false, false, false, false, false, true, true, false, false, "
     "false, cutlass::bfloat16_t, false, 1>, flash::CollectiveEpilogueFwd<cute::tuple<cute::C<128>"
     ", cute::C<128>, cute::C<176> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::"
     "bfloat16_t, cutlass::arch::Sm90, 256, false, false, false, false>, flash::"
     "StaticPersistentTileScheduler<false> > > >",
     dict(family="flash", subkind="fa3", dtype="bf16", arch="sm90", tensor_cores=True,
          tile="128x176", stages=2, head_dim=128, short="flash FA3 fwd bf16 hd128 (sm90)")),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x256_4x1x1_"
     "kernel0_0",
     dict(family="cudnn_attention", direction="forward", dtype="fp16", tensor_cores=True,
          arch="sm90", tile="64x128")),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26",  # as truncated there
     dict(family="cudnn_attention", direction="backward", arch="sm90")),
    ("fmha_cutlassB_bf16_aligned_128x128_k128_sm80",
     dict(family="mem_efficient", direction="backward", dtype="bf16", head_dim=128,
          tile="128x128", arch="sm80")),
    ("triton_tem_fused_flex_attention_0",
     dict(family="flex_attention", subkind="template", direction="forward")),
    ("triton_tem_fused_flex_attention_backward_2",
     dict(family="flex_attention", direction="backward", short="flex attention bwd")),
    ("nvjet_tst_128x256_64x6_2x1_2cta_v_bz_TNT",
     dict(family="gemm", library="cuBLAS", dtype="bf16", tensor_cores=True, arch=None,
          tile="128x256")),
    ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", dict(family="gemm", dtype="fp16")),
    ("nvjet_sm90_tst_192x208_64x4_2x1_v_bz_coopB_bias_TNT",
     dict(family="gemm", dtype="bf16", arch="sm90", tile="192x208",
          short="cuBLAS GEMM bf16 tensor-core 192x208 (sm90)")),
    ("nvjet_sm100_tst_64x16_64x16_2x4_2cta_h_bz_splitK_TNT", dict(family="gemm", arch="sm100")),
    ("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_stages_64x6_tn",
     dict(family="gemm", dtype="fp16", tensor_cores=True, tile="64x64", stages=6)),
    ("ampere_bf16_s1688gemm_bf16_128x64_sliced1x2_ldg8_f2f_tn",  # 16-bit s1688: not tf32
     dict(family="gemm", dtype="bf16", tensor_cores=True, arch="sm80")),
    ("void cutlass::Kernel2<cutlass_80_tensorop_f16_s16816gemm_f16_128x128_32x4_tn_align8>"
     "(T1::Params)",
     dict(family="gemm", library="CUTLASS", dtype="fp16", tensor_cores=True, arch="sm80",
          tile="128x128", stages=4)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "expected"), REPORT_CASES, ids=[n[:40] for n, _ in REPORT_CASES])
def test_profiler_report_names(name: str, expected: dict[str, Any]) -> None:
    _check(decode_kernel_name(name), expected)


# --- API properties ----------------------------------------------------------------------------


def test_decode_is_cached_and_immutable() -> None:
    name = BRIEF_CASES[0][0]
    k = decode_kernel_name(name)
    assert decode_kernel_name(name) is k
    with pytest.raises(AttributeError):
        k.family = "other"  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_decodes_into_the_vocabulary(name: str) -> None:
    k = decode_kernel_name(name)
    assert k.family in FAMILIES
    assert k.dtype is None or k.dtype in DTYPES
    assert isinstance(k.short, str)
