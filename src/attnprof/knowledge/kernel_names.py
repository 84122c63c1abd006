"""Decode GPU kernel names into what they tell an expert: family, dtype, tile, architecture.

Kernel names in a torch.profiler trace are the only record of *which* implementation ran:
``ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn`` says cuBLAS, bf16 inputs,
tensor cores (``s16816`` is the 16x8x16 MMA), a 128x64 CTA tile, 4 pipeline stages, Ampere.
:func:`decode_kernel_name` turns such a string into a :class:`KernelName`.

The decoder is declarative: an ordered table of ``(family, regex)`` rows (first match wins),
then small extractor functions, each reading one fact off the raw string. No demangling: the
regexes run on the name as the profiler recorded it, demangled or not. Everything not encoded
in the name stays ``None``; the decoder never guesses from context (FlashAttention-2 names,
for one, carry no architecture: the same binary runs on sm80 to sm90).

Family vocabulary (:data:`FAMILIES`):

===================  =========================================================================
``flash``            FlashAttention-2 in PyTorch (``pytorch_flash::flash_fwd_kernel``, split-KV,
                     ``flash_bwd_*``) and FlashAttention-3 (``flash::FlashAttnFwdSm90``)
``mem_efficient``    xformers/CUTLASS fmha (``fmha_cutlassF_*``, ``fmha_cutlassB_*``,
                     ``PyTorchMemEffAttention::AttentionKernel``)
``cudnn_attention``  cuDNN fused SDPA (``cudnn_generated_fort_native_sdpa_*_fprop``/``bprop``)
``flex_attention``   Inductor's flex_attention templates (``triton_tem_fused_flex_attention_*``)
``cpu_flash``        the CPU op ``aten::_scaled_dot_product_flash_attention_for_cpu``
``triton``           any other Triton kernel (Inductor ``triton_tem_``/``poi_``/``red_``/``per_``)
``gemm``             cuBLAS/cuBLASLt (incl. ``nvjet_*``, GEMV, split-K reduce), CUTLASS GEMMs,
                     ROCm Tensile ``Cijk_*``
``conv``             cuDNN/CUTLASS convolutions (implicit GEMM, winograd, FFT, scudnn)
``softmax``          ``cunn_SoftMaxForward``, ``softmax_warp_*``
``norm``             layer/batch/group/RMS norm kernels
``index``            gather/scatter/index_select/embedding (KV-cache writes land here)
``copy``             device kernels that copy (``direct_copy_kernel_cuda``, ``CatArrayBatchedCopy``)
``elementwise``      ``vectorized_/unrolled_elementwise_kernel``, foreach, dropout
``reduce``           ``reduce_kernel`` and other reductions
``memcpy``           ``Memcpy HtoD (Pageable -> Device)`` and friends (DMA, not kernels)
``memset``           ``Memset (Device)``
``nccl``             NCCL collectives; RCCL kernels carry the same ``ncclKernel_*`` names
``other``            none of the above
===================  =========================================================================

Shape fields: ``tile`` is the CTA tile ``"MxN"`` (GEMM/conv: output tile; attention: query
block x key block); ``stages`` the software-pipeline depth where the name states it;
``head_dim`` the compiled head-dim bucket of an attention kernel (the real head dim is at most
this); ``warps`` the warps per CTA (FlashAttention-2 traits).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal, get_args

Family = Literal[
    "flash", "mem_efficient", "cudnn_attention", "flex_attention", "cpu_flash", "triton",
    "gemm", "conv", "softmax", "norm", "index", "copy", "elementwise", "reduce",
    "memcpy", "memset", "nccl", "other",
]  # fmt: skip
Direction = Literal["forward", "backward"]

FAMILIES: tuple[Family, ...] = get_args(Family)
ATTENTION_FAMILIES: frozenset[Family] = frozenset(
    {"flash", "mem_efficient", "cudnn_attention", "flex_attention", "cpu_flash"}
)
DTYPES: tuple[str, ...] = ("fp8", "int8", "bf16", "fp16", "tf32", "fp32", "fp64")


@dataclass(frozen=True, slots=True)
class KernelName:
    """What one kernel name says. Only ``raw`` and ``family`` are always set."""

    raw: str
    family: Family
    library: str | None = None  # "cuBLAS", "CUTLASS", "cuDNN", "Tensile", "Triton", ...
    subkind: str | None = None  # per family: Triton kernel kind, memcpy kind, collective, ...
    direction: Direction | None = None
    dtype: str | None = None  # one of DTYPES: the input (not accumulator) precision
    tensor_cores: bool | None = None
    arch: str | None = None  # "sm80", "sm90", "gfx90a", ...
    tile: str | None = None
    stages: int | None = None
    head_dim: int | None = None
    warps: int | None = None

    @property
    def is_attention(self) -> bool:
        """True for the fused-attention families (one kernel computes softmax(QK^T)V)."""
        return self.family in ATTENTION_FAMILIES

    @property
    def short(self) -> str:
        """A compact human label for tables, e.g. ``cuBLAS GEMM bf16 tensor-core 128x64 (sm80)``."""
        return _label(self)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# Ordered: the first matching row names the family. Order encodes precedence where names
# overlap: cuDNN SDPA names say "flash" and "fprop", conv names say "gemm", copies run inside
# elementwise kernels, NCCL names say "Reduce".
_FAMILY_RULES: tuple[tuple[Family, re.Pattern[str]], ...] = (
    ("memcpy", _rx(r"^Memcpy\b")),
    ("memset", _rx(r"^Memset\b")),
    ("cpu_flash", _rx(r"flash_attention_for_cpu")),
    ("flex_attention", _rx(r"^triton_\w*flex_(?:attention|decoding)")),
    ("triton", _rx(r"^triton_")),
    ("cudnn_attention", _rx(r"cudnn\w*sdpa|sdpa\w*_[fb]prop")),
    ("mem_efficient", _rx(r"fmha_cutlass[FB]|PyTorchMemEffAttention|AttentionBackwardKernel<")),
    ("flash", _rx(r"pytorch_flash::|flash_(?:fwd|bwd)_\w*kernel|\bflash::|FlashAttn")),
    ("nccl", _rx(r"(?i:nccl|rccl)")),
    ("conv", _rx(r"(?i:convol|conv[123]d|[23]dconv|fprop|dgrad|wgrad|winograd|scudnn|fft[23]d_"
                 r"|cask_cudnn|cutlass_cudnn|cudnn::cnn|im2col|col2im)")),
    ("gemm", _rx(r"(?i:(?<!fb)gemm|gemv)|^Cijk_|nvjet|splitKreduce|cublasLt")),
    ("softmax", _rx(r"(?i:softmax)")),
    ("norm", _rx(r"(?i:(?:layer|batch|group|rms)_?norm|GammaBetaBackward)|cudnn::bn_")),
    ("index", _rx(r"(?i:index|indices|gather|scatter|embedding)")),
    ("copy", _rx(r"(?i:copy)|nchwToNhwc|nhwcToNchw")),
    ("elementwise", _rx(r"(?i:elementwise|dropout)|multi_tensor_apply")),
    ("reduce", _rx(r"(?i:reduce)")),
)  # fmt: skip

_MATMUL_FAMILIES = ATTENTION_FAMILIES | {"gemm", "conv"}
_NO_DIRECTION = frozenset({"memcpy", "memset", "gemm", "nccl"})
_FIXED_LIBRARY: dict[str, str] = {
    "flash": "FlashAttention", "mem_efficient": "xformers", "cudnn_attention": "cuDNN",
    "flex_attention": "Triton", "triton": "Triton", "cpu_flash": "PyTorch", "nccl": "NCCL",
}  # fmt: skip
_GEMM_LIBRARY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Tensile", _rx(r"^Cijk_")),
    ("cuDNN", _rx(r"cudnn")),
    ("CUTLASS", _rx(r"cutlass")),
    ("cuBLAS", _rx(r"^(?:ampere|volta|turing|maxwell|pascal|hopper)_|^sm\d+_xmma|nvjet|(?i:cublas)"
                   r"|gemv|gemmk1|splitKreduce|magma_")),
)  # fmt: skip

# Input precision, highest priority first: a name that mentions a 16-bit type anywhere is a
# 16-bit kernel even though it also names its fp32 accumulator (``bf16bf16_bf16f32_f32``).
_DTYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fp8", _rx(r"(?i:e4m3|e5m2|fp8|float8)")),
    ("bf16", _rx(r"(?i:bf16|bfloat16)")),
    ("fp16", _rx(r"(?i:fp16|half)|(?<![a-z])f16|h884|h1688|h16816|hgemm")),
    ("int8", _rx(r"(?<![a-z])int8|i8816|imma")),  # not uint8_t: that is a mask/bool buffer
    # s1688 on fp32 operands is the TF32 tensor-core path (16-bit s1688 names say fp16 above).
    ("tf32", _rx(r"(?i:tf32|tfloat32)|s1688(?:gemm|fprop|dgrad|wgrad)")),
)  # fmt: skip
# For 32 vs 64 bit the first mention wins: templates lead with the data type, while later
# parameters may be double scalars (``uniform_and_transform<float, ...>(..., double, ...)``).
_WIDE_RE = _rx(
    r"(?P<fp32>(?<![A-Za-z0-9])float(?![A-Za-z0-9])|fp32|(?<![a-z])f32|sgemm|scudnn|_simt_s)"
    r"|(?P<fp64>(?<![A-Za-z0-9])double(?![A-Za-z0-9])|fp64|(?<![a-z])f64|dgemm)"
)
_TENSILE_TYPE_RE = _rx(r"^Cijk_A[a-z]+_B[a-z]+_([A-Z])")
_TENSILE_TYPES = {"S": "fp32", "D": "fp64", "H": "fp16", "B": "bf16"}
# nvjet names spell A/compute/D types as three letters: hsh = fp16 in, fp32 compute, fp16 out.
_NVJET_TYPE_RE = _rx(r"^nvjet_(?:sm\d+_)?([a-z])[a-z]{2}_")
_NVJET_TYPES = {"h": "fp16", "t": "bf16"}

_TC_YES_RE = _rx(
    r"s16816|s1688|h16816|h1688|[hs]884|i8816|i16832|imma|hmma|wmma|xmma|(?i:tensorop)|gmma"
    r"|tensor\d+x\d+x\d+|_MI[1-9]\d*x|nvjet"
)
_TC_NO_RE = _rx(r"sgemm|dgemm|simt|scudnn|gemv|[gcz]gemm")

_ARCH_RE = _rx(
    r"(?<![a-z])sm_?(?P<sm>\d{2,3})(?!\d)|Sm(?P<Sm>\d{2,3})(?!\d)|cutlass_(?P<cutlass>\d{2,3})_"
    r"|(?P<word>(?i:ampere|volta|turing|hopper|maxwell|pascal|blackwell))"
    r"|ISA(?P<isa>\d{2,3}[a-z]?)|(?P<gfx>gfx\d{3,4}[a-z]?)"
)
# Marketing names of cuBLAS/cuDNN kernel families; sm86/sm89 GPUs run the "ampere_" kernels.
_ARCH_WORDS = {
    "maxwell": "sm50", "pascal": "sm60", "volta": "sm70", "turing": "sm75",
    "ampere": "sm80", "hopper": "sm90", "blackwell": "sm100",
}  # fmt: skip

_BWD_RE = _rx(r"(?i:bwd|bprop|dgrad|wgrad|backward)|cutlassB|(?<![a-z])grad_|bn_bw_")
_FWD_RE = _rx(r"(?i:fwd|fprop|forward)|cutlassF|::AttentionKernel<|bn_fw_")

_I = r"(?:\(int\))?"  # nsys prints template ints as "(int)128"
_FLASH_TRAITS_RE = _rx(rf"Flash_(?:fwd|bwd)_kernel_traits<\s*{_I}(\d+)" + rf",\s*{_I}(\d+)" * 3)
_FA3_MAINLOOP_RE = _rx(
    r"CollectiveMainloopFwdSm\d+<(\d+), cute::tuple<(?:cute::C<\d+>, ?)*cute::C<\d+> ?>, "
    r"cute::tuple<cute::C<(\d+)>, cute::C<(\d+)>, cute::C<(\d+)> ?>"
)
_MEMEFF_TEMPLATE_RE = _rx(r"::AttentionKernel<[^,]+,[^,]+,\s*\w+,\s*(\d+),\s*(\d+),\s*(\d+)")
_MEMEFF_HEADDIM_RE = _rx(r"_k(\d+)_sm\d+")
_CUDNN_SDPA_TILE_RE = _rx(r"knob_\d+_(\d+)x(\d+)x\d+")
_TILE_STAGE_RES: tuple[re.Pattern[str], ...] = (
    _rx(r"tilesize(\d+)x(\d+)x\d+_stage(\d+)"),  # cuBLAS/cuDNN xmma
    _rx(r"_(\d+)x(\d+)_\d+x(\d+)_(?:nn|nt|tn|tt|nhwc|align)"),  # CUTLASS: MxN_KxStages
    _rx(r"_(\d+)x(\d+)_.*?stages_\d+x(\d+)"),  # cuBLAS: ..._MxN_ldg8_f2f_stages_KxStages
)
_TILE_RES: tuple[re.Pattern[str], ...] = (
    _rx(r"_MT(\d+)x(\d+)x\d+"),  # Tensile macro tile
    _rx(r"GemmShape(?:ILi|<)(\d+)(?:ELi|,\s*)(\d+)"),  # CUTLASS template, mangled or not
    _rx(r"(?<![\dxA-Za-z])(\d{2,3})x(\d{2,3})(?![\dx])"),  # first bare MxN
)


def _family(name: str) -> Family:
    for family, pattern in _FAMILY_RULES:
        if pattern.search(name):
            return family
    return "other"


def _library(name: str, family: Family) -> str | None:
    if family in _FIXED_LIBRARY:
        return _FIXED_LIBRARY[family]
    if family in ("gemm", "conv"):
        for library, pattern in _GEMM_LIBRARY:
            if pattern.search(name):
                return library
    return None


def _subkind(name: str, family: Family) -> str | None:
    if family in ("triton", "flex_attention"):
        kinds = {"tem": "template", "poi": "pointwise", "red": "reduction",
                 "per": "persistent_reduction", "for": "foreach"}  # fmt: skip
        m = re.match(r"triton_([a-z]{3})_", name)
        return kinds.get(m.group(1)) if m else None
    if family == "flash":
        for kind, token in (("fa3", "FlashAttn"), ("splitkv_combine", "splitkv_combine"),
                            ("splitkv", "splitkv")):  # fmt: skip
            if token in name:
                return kind
        return None
    if family == "memcpy":
        m = re.match(r"Memcpy (\w+)", name)
        return m.group(1) if m else None
    if family == "nccl":
        m = re.search(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", name)
        return m.group(1) if m else None
    if family == "gemm":
        if "splitKreduce" in name:
            return "splitk_reduce"
        if "gemv" in name:
            return "gemv"
        if re.match(r"(?:void )?epilogue::", name):
            return "epilogue"
    return None


def _dtype(name: str, family: Family) -> str | None:
    if family in ("memcpy", "memset"):
        return None
    for pattern, table in ((_TENSILE_TYPE_RE, _TENSILE_TYPES), (_NVJET_TYPE_RE, _NVJET_TYPES)):
        m = pattern.match(name)
        if m:
            return table.get(m.group(1))
    for dtype, pattern in _DTYPE_RULES:
        if pattern.search(name):
            return dtype
    m = _WIDE_RE.search(name)
    return m.lastgroup if m else None


def _arch(name: str) -> str | None:
    m = _ARCH_RE.search(name)
    if m is None:
        return None
    number = m.group("sm") or m.group("Sm") or m.group("cutlass")
    if number:
        return f"sm{number}"
    if m.group("word"):
        return _ARCH_WORDS[m.group("word").lower()]
    if m.group("isa"):
        return f"gfx{m.group('isa')}"
    return m.group("gfx")


def _tensor_cores(name: str, family: Family, dtype: str | None, arch: str | None) -> bool | None:
    if family not in _MATMUL_FAMILIES:
        return None
    if _TC_YES_RE.search(name):
        return True
    if _TC_NO_RE.search(name):
        return False
    if family == "flash":
        return True  # FA2 needs sm80+ mma.sync, FA3 wgmma: there is no SIMT flash kernel
    if family == "mem_efficient" and arch and arch.startswith("sm") and dtype in ("bf16", "fp16"):
        # CUTLASS fmha uses tensor-core MMAs for 16-bit inputs from Volta on, SIMT before.
        return int(arch[2:]) >= 70
    return None


def _direction(name: str, family: Family) -> Direction | None:
    if family in _NO_DIRECTION:
        return None
    if _BWD_RE.search(name):
        return "backward"
    if _FWD_RE.search(name) or family in ATTENTION_FAMILIES:
        # PyTorch names attention backward kernels/ops explicitly; the unmarked one is forward.
        return "forward"
    return None


def _shape(name: str, family: Family) -> tuple[str | None, int | None, int | None, int | None]:
    """Return (tile, stages, head_dim, warps) as far as the name states them."""
    if family == "flash":
        m = _FLASH_TRAITS_RE.search(name)  # <kHeadDim, kBlockM, kBlockN, kNWarps, ...>
        if m:
            return f"{m[2]}x{m[3]}", None, int(m[1]), int(m[4])
        m = _FA3_MAINLOOP_RE.search(name)  # <Stages, Cluster, TileShape<kBlockM, kBlockN, kHeadDim>
        if m:
            return f"{m[2]}x{m[3]}", int(m[1]), int(m[4]), None
        return None, None, None, None
    if family == "mem_efficient":
        # AttentionKernel<scalar, arch, aligned, kQueriesPerBlock, kKeysPerBlock, kMaxK, ...>
        m = _MEMEFF_TEMPLATE_RE.search(name)
        head_dim = int(m[3]) if m else None
        if head_dim is None and (k := _MEMEFF_HEADDIM_RE.search(name)):
            head_dim = int(k[1])
        t = _TILE_RES[-1].search(name)
        return (f"{t[1]}x{t[2]}" if t else None), None, head_dim, None
    if family == "cudnn_attention":
        m = _CUDNN_SDPA_TILE_RE.search(name)  # knob_N_MxNxK: the last is not documented
        return (f"{m[1]}x{m[2]}" if m else None), None, None, None
    if family in ("gemm", "conv"):
        for pattern in _TILE_STAGE_RES:
            m = pattern.search(name)
            if m:
                return f"{m[1]}x{m[2]}", int(m[3]), None, None
        for pattern in _TILE_RES:
            m = pattern.search(name)
            if m:
                return f"{m[1]}x{m[2]}", None, None, None
    return None, None, None, None


def _function_name(raw: str) -> str:
    """The bare function name of a (demangled) C++ signature, for labels."""
    head = re.sub(r"^void\s+|\(anonymous namespace\)::|<unnamed>::", "", raw)
    head = re.split(r"[<(]", head, maxsplit=1)[0]
    return head.rsplit("::", 1)[-1][:60] or raw[:60]


_FAMILY_LABELS = {
    "flash": "flash", "mem_efficient": "mem-efficient", "cudnn_attention": "cuDNN attention",
    "flex_attention": "flex attention", "cpu_flash": "CPU flash",
}  # fmt: skip


def _label(k: KernelName) -> str:
    direction = {"forward": "fwd", "backward": "bwd", None: None}[k.direction]
    cores = {True: "tensor-core", False: "SIMT", None: None}[k.tensor_cores]
    arch = f"({k.arch})" if k.arch else None
    if k.family in ATTENTION_FAMILIES:
        hd = f"hd{k.head_dim}" if k.head_dim else None
        extra = {"fa3": "FA3", "splitkv": "split-KV", "splitkv_combine": "split-KV combine"}.get(
            k.subkind or ""
        )
        parts = [_FAMILY_LABELS[k.family], extra, direction, k.dtype, hd, arch]
    elif k.family in ("gemm", "conv"):
        what = {"gemv": "GEMV", "splitk_reduce": "split-K reduce", "epilogue": "epilogue"}
        noun = "conv" if k.family == "conv" else what.get(k.subkind or "", "GEMM")
        parts = [k.library, noun, direction, k.dtype, cores, k.tile, arch]
    elif k.family == "triton":
        m = re.search(r"fused_(\w+?)_\d+$", k.raw)
        ops = f"({m[1][:40]})" if m else None
        parts = ["Triton", k.subkind, ops]
    elif k.family in ("memcpy", "memset"):
        return k.raw
    elif k.family == "nccl":
        parts = ["NCCL", k.subkind, k.dtype]
    elif k.family == "other":
        parts = [_function_name(k.raw), k.dtype]
    else:
        parts = [k.family, direction, k.dtype]
    return " ".join(p for p in parts if p)


@functools.lru_cache(maxsize=8192)
def decode_kernel_name(name: str) -> KernelName:
    """Decode one kernel (or memcpy/memset, or CPU attention op) name from a trace.

    Pure and cached: traces repeat the same few hundred names thousands of times, and the
    returned :class:`KernelName` is immutable, so callers may share it freely.
    """
    family = _family(name)
    dtype = _dtype(name, family)
    arch = _arch(name) if family not in ("memcpy", "memset") else None
    tile, stages, head_dim, warps = _shape(name, family)
    return KernelName(
        raw=name,
        family=family,
        library=_library(name, family),
        subkind=_subkind(name, family),
        direction=_direction(name, family),
        dtype=dtype,
        tensor_cores=_tensor_cores(name, family, dtype, arch),
        arch=arch,
        tile=tile,
        stages=stages,
        head_dim=head_dim,
        warps=warps,
    )
