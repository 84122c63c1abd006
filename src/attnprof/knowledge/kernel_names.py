"""Decode GPU kernel names into what they tell an expert: family, dtype, tile, architecture.

:func:`decode_kernel_name` turns a name as a torch.profiler trace records it into a
:class:`KernelName`: an ordered table of ``(family, regex)`` rows, first match wins, then
small extractors, one fact each; what the name does not say stays ``None``. The families,
every field's rules and the real-name corpus it is tested on are in ``docs/kernel-names.md``.
"""

from __future__ import annotations

import functools
import re
from typing import Literal, get_args

import msgspec

Family = Literal[
    "flash", "mem_efficient", "cudnn_attention", "flex_attention", "cpu_flash", "triton",
    "gemm", "conv", "softmax", "norm", "mask", "index", "copy", "elementwise", "reduce",
    "memcpy", "memset", "nccl", "other",
]  # fmt: skip
Direction = Literal["forward", "backward"]

FAMILIES: tuple[Family, ...] = get_args(Family)
ATTENTION_FAMILIES: frozenset[Family] = frozenset(
    {"flash", "mem_efficient", "cudnn_attention", "flex_attention", "cpu_flash"}
)
DTYPES: tuple[str, ...] = ("fp8", "int8", "bf16", "fp16", "tf32", "fp32", "fp64")


class KernelName(msgspec.Struct, frozen=True):
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


def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# Ordered: the first matching row names the family. Order encodes precedence where names
# overlap: cuDNN SDPA names say "flash" and "fprop", conv names say "gemm", copies run inside
# elementwise kernels, NCCL names say "Reduce".
_FAMILY_RULES: tuple[tuple[Family, re.Pattern[str]], ...] = (
    ("memcpy", _regex(r"^Memcpy\b")),
    ("memset", _regex(r"^Memset\b")),
    ("cpu_flash", _regex(r"flash_attention_for_cpu")),
    ("flex_attention", _regex(r"^triton_\w*flex_(?:attention|decoding)")),
    ("triton", _regex(r"^triton_")),
    ("cudnn_attention", _regex(r"cudnn\w*sdpa|sdpa\w*_[fb]prop|cudnn::fusion::compute_dot_do_o")),
    ("mem_efficient", _regex(r"fmha_cutlass[FB]|PyTorchMemEffAttention|AttentionBackwardKernel<")),
    ("flash", _regex(r"pytorch_flash::|flash_(?:fwd|bwd)_\w*kernel|\bflash::|FlashAttn"
                  r"|FlashAttention(?:Forward|Backward)|ck_tile::Fmha\w*Kernel|^aiter::fmha_"
                  r"|^attn_(?:fwd|bwd)")),
    ("nccl", _regex(r"(?i:nccl|rccl)")),
    ("conv", _regex(r"(?i:convol|conv[123]d|[23]dconv|fprop|dgrad|wgrad|winograd|scudnn|fft[23]d_"
                 r"|cask_cudnn|cutlass_cudnn|cudnn::cnn|im2col|col2im)")),
    ("gemm", _regex(r"(?i:(?<!fb)gemm|gemv)|(?:^|_)Cijk_|nvjet|splitKreduce|cublasLt")),
    ("softmax", _regex(r"(?i:softmax)")),
    ("norm", _regex(r"(?i:(?:layer|batch|group|rms)_?norm|GammaBetaBackward)|cudnn::bn_")),
    # Building or applying a boolean mask: the math path's tril/triu, where, masked_fill.
    ("mask", _regex(r"triu_tril|masked_fill|masked_scatter|where_kernel")),
    ("index", _regex(r"(?i:index|indices|gather|scatter|embedding)|reshape_and_cache")),
    ("copy", _regex(r"(?i:copy)|nchwToNhwc|nhwcToNchw")),
    ("elementwise", _regex(r"(?i:elementwise|dropout)|multi_tensor_apply")),
    ("reduce", _regex(r"(?i:reduce)")),
)  # fmt: skip

_MATMUL_FAMILIES = ATTENTION_FAMILIES | {"gemm", "conv"}
_NO_DIRECTION = frozenset({"memcpy", "memset", "gemm", "nccl"})
_TENSILE_RE = _regex(r"(?:^|_)Cijk_")
_FIXED_LIBRARY: dict[str, str] = {
    "mem_efficient": "xformers", "cudnn_attention": "cuDNN",
    "flex_attention": "Triton", "triton": "Triton", "cpu_flash": "PyTorch", "nccl": "NCCL",
}  # fmt: skip
_GEMM_LIBRARY: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Tensile", _TENSILE_RE),
    ("CK", _regex(r"\bck(?:_tile)?::")),
    ("cuDNN", _regex(r"cudnn")),
    ("CUTLASS", _regex(r"cutlass")),
    ("cuBLAS", _regex(r"^(?:ampere|volta|turing|maxwell|pascal|hopper)_|^sm\d+_xmma|nvjet"
                      r"|(?i:cublas)|gemv|gemmk1|splitKreduce|magma_")),
)  # fmt: skip

# Input precision, highest priority first: a name that mentions a 16-bit type anywhere is a
# 16-bit kernel even though it also names its fp32 accumulator (``bf16bf16_bf16f32_f32``).
_DTYPE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # vLLM's Fp8KVCacheDataType is a template enum (kAuto = the cache's own type), not fp8.
    ("fp8", _regex(r"(?i:e4m3|e5m2|fp8(?!kvcache)|float8)")),
    ("bf16", _regex(r"(?i:bf16|bfloat16)|bhalf_t")),
    ("fp16", _regex(r"(?i:fp16|half)|(?<![a-z])f16|h884|h1688|h16816|hgemm")),
    ("int8", _regex(r"(?<![a-z])int8|i8816|imma")),  # not uint8_t: that is a mask/bool buffer
    # s1688 on fp32 operands is the TF32 tensor-core path (16-bit s1688 names say fp16 above).
    ("tf32", _regex(r"(?i:tf32|tfloat32)|s1688(?:gemm|fprop|dgrad|wgrad)")),
)  # fmt: skip
# For 32 vs 64 bit the first mention wins: templates lead with the data type, while later
# parameters may be double scalars (``uniform_and_transform<float, ...>(..., double, ...)``).
_WIDE_RE = _regex(
    r"(?P<fp32>(?<![A-Za-z0-9])float(?![A-Za-z0-9])|fp32|(?<![a-z])f32|sgemm|scudnn|_simt_s)"
    r"|(?P<fp64>(?<![A-Za-z0-9])double(?![A-Za-z0-9])|fp64|(?<![a-z])f64|dgemm)"
)
_TENSILE_TYPE_RE = _regex(r"^(?:Custom_)?Cijk_A[a-z]+_B[a-z]+_(F8|B8|[A-Z])")
_TENSILE_TYPES = {"S": "fp32", "D": "fp64", "H": "fp16", "B": "bf16", "F8": "fp8", "B8": "fp8"}
# nvjet names spell A/compute/D types as three letters: hsh = fp16 in, fp32 compute, fp16 out.
_NVJET_TYPE_RE = _regex(r"^nvjet_(?:sm\d+_)?([a-z])[a-z]{2}_")
_NVJET_TYPES = {"h": "fp16", "t": "bf16", "s": "fp32"}

_TC_YES_RE = _regex(
    r"s16816|s1688|h16816|h1688|[hs]884|i8816|i16832|imma|hmma|wmma|xmma|(?i:tensorop)|gmma"
    r"|tensor\d+x\d+x\d+|_MI[1-9]\d*x|nvjet|_xdl|(?i:mfma)"
)
_TC_NO_RE = _regex(r"sgemm|dgemm|simt|scudnn|gemv|gemmk1|[gcz]gemm")
_CK_FLASH_RE = _regex(r"ck_tile::|^aiter::")
# Flash kernels by generation or role, first match wins (FA4 is CuTe DSL, FA3 CUTLASS 3).
_FLASH_KINDS = (
    ("fa4", "FlashAttentionForward"), ("fa4", "FlashAttentionBackward"), ("fa4", "flash_attncute"),
    ("fa3", "FlashAttn"), ("splitkv_combine", "splitkv_combine"), ("splitkv", "splitkv"),
)  # fmt: skip

_ARCH_RE = _regex(
    r"(?<![a-z])sm_?(?P<sm>\d{2,3})(?!\d)|Sm(?P<Sm>\d{2,3})(?!\d)|cutlass_(?P<cutlass>\d{2,3})_"
    r"|(?P<word>(?i:ampere|volta|turing|hopper|maxwell|pascal|blackwell))"
    r"|ISA(?P<isa>\d{2,3}[a-z]?)|(?P<gfx>gfx\d{3,4}[a-z]?)"
)
# Marketing names of cuBLAS/cuDNN kernel families; sm86/sm89 GPUs run the "ampere_" kernels.
_ARCH_WORDS = {
    "maxwell": "sm50", "pascal": "sm60", "volta": "sm70", "turing": "sm75",
    "ampere": "sm80", "hopper": "sm90", "blackwell": "sm100",
}  # fmt: skip

_BWD_RE = _regex(r"(?i:bwd|bprop|dgrad|wgrad|backward)|cutlassB|(?<![a-z])grad_|bn_bw_|dot_do_o")
_FWD_RE = _regex(r"(?i:fwd|fprop|forward)|cutlassF|::AttentionKernel<|bn_fw_")

_I = r"(?:\(int\))?"  # nsys prints template ints as "(int)128"
_FLASH_TRAITS_RE = _regex(rf"Flash_(?:fwd|bwd)_kernel_traits<\s*{_I}(\d+)" + rf",\s*{_I}(\d+)" * 3)
_FA3_MAINLOOP_RE = _regex(
    r"CollectiveMainloopFwdSm\d+<(\d+), cute::tuple<(?:cute::C<\d+>, ?)*cute::C<\d+> ?>, "
    r"cute::tuple<cute::C<(\d+)>, cute::C<(\d+)>, cute::C<(\d+)> ?>"
)
_MEMEFF_TEMPLATE_RE = _regex(r"::AttentionKernel<[^,]+,[^,]+,\s*\w+,\s*(\d+),\s*(\d+),\s*(\d+)")
_MEMEFF_HEADDIM_RE = _regex(r"_k(\d+)_sm\d+")
_CUDNN_SDPA_TILE_RE = _regex(r"knob_\d+_(\d+)x(\d+)x\d+")
_TILE_STAGE_RES: tuple[re.Pattern[str], ...] = (
    _regex(r"tilesize(\d+)x(\d+)x\d+_stage(\d+)"),  # cuBLAS/cuDNN xmma
    _regex(r"_(\d+)x(\d+)_\d+x(\d+)_(?:nn|nt|tn|tt|nhwc|align)"),  # CUTLASS: MxN_KxStages
    _regex(r"_(\d+)x(\d+)_.*?stages_\d+x(\d+)"),  # cuBLAS: ..._MxN_ldg8_f2f_stages_KxStages
)
_TILE_RES: tuple[re.Pattern[str], ...] = (
    _regex(r"_MT(\d+)x(\d+)x\d+"),  # Tensile macro tile
    _regex(r"GemmShape(?:ILi|<)(\d+)(?:ELi|,\s*)(\d+)"),  # CUTLASS template, mangled or not
    _regex(r"(?<![\dxA-Za-z])(\d{2,3})x(\d{2,3})(?![\dx])"),  # first bare MxN
)


def _family(name: str) -> Family:
    for family, pattern in _FAMILY_RULES:
        if pattern.search(name):
            return family
    return "other"


def _library(name: str, family: Family) -> str | None:
    if family in _FIXED_LIBRARY:
        return _FIXED_LIBRARY[family]
    if family == "flash":
        # ROCm's flash attention: CK's fmha (flash-attention's ROCm backend, AITER) or
        # aotriton's Triton kernels (PyTorch's ROCm SDPA); everything else is Dao-AILab's.
        if _CK_FLASH_RE.search(name):
            return "CK"
        return "Triton" if name.startswith("attn_") else "FlashAttention"
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
        for kind, token in _FLASH_KINDS:
            if token in name:
                return kind
        return "ck" if _CK_FLASH_RE.search(name) else None
    if family == "mask":
        for kind, token in (("triangle", "triu_tril"), ("where", "where"),
                            ("masked_fill", "masked_fill"), ("masked_scatter", "masked_scatter")):
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
        # FA2 needs sm80+ mma.sync, FA3 wgmma, FA4 tcgen05, ROCm's CK/aotriton MFMA: there
        # is no SIMT flash kernel.
        return True
    sm = int(arch[2:]) if arch and arch.startswith("sm") and arch[2:].isdigit() else None
    if family in ATTENTION_FAMILIES and sm is not None and sm >= 90:
        return True  # Hopper and later fused attention is wgmma/tcgen05 only
    if family == "mem_efficient" and sm is not None:
        # xformers' DefaultGemmType: tensor-core MMAs for fp16 from Volta on (bf16 exists only
        # for sm80+), and for fp32 from sm80 on (3xTF32, OpMultiplyAddFastF32); SIMT before.
        if dtype in ("bf16", "fp16"):
            return sm >= 70
        if dtype == "fp32":
            return sm >= 80
    if family == "gemm" and _TENSILE_RE.search(name):
        return False  # a Tensile kernel on matrix cores names its MFMA (_MI...); this has none
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


_MASK_LABELS = {"triangle": "triu/tril", "where": "where", "masked_fill": "masked_fill",
                "masked_scatter": "masked_scatter"}


def _label(k: KernelName) -> str:
    direction = {"forward": "fwd", "backward": "bwd", None: None}[k.direction]
    cores = {True: "tensor-core", False: "SIMT", None: None}[k.tensor_cores]
    arch = f"({k.arch})" if k.arch else None
    if k.family in ATTENTION_FAMILIES:
        hd = f"hd{k.head_dim}" if k.head_dim else None
        extra = {"fa3": "FA3", "fa4": "FA4", "ck": "CK", "splitkv": "split-KV",
                 "splitkv_combine": "split-KV combine"}.get(k.subkind or "")
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
    elif k.family == "mask":
        parts = ["mask", _MASK_LABELS.get(k.subkind or ""), k.dtype]
    elif k.family == "other":
        parts = [_function_name(k.raw), k.dtype]
    else:
        parts = [k.family, direction, k.dtype]
    return " ".join(p for p in parts if p)


# A template argument that is an integer, bool or opaque (byte-copy) type: the kernel's data
# is not floating point, so it has no precision to state (and none to borrow from its op).
_INTEGER_DATA_RE = _regex(
    r"<\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:long|int|bool|char|short"
    r"|u?int(?:8|16|32|64)_t)\b|OpaqueType<"
)


def names_integer_data(name: str) -> bool:
    """Whether the name states that the kernel works on integer, bool or opaque data
    (``FillFunctor<long>``, ``ScanTileState<int, true>``, ``OpaqueType<4>``)."""
    return _INTEGER_DATA_RE.search(name) is not None


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
