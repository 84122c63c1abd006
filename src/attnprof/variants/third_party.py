"""Third-party attention kernels, measured when installed: flash-attn, xformers, FlashInfer.

Each is a registered variant whose package is imported only inside ``supports``/``build``,
so a missing package is never an import error at start-up: the row is ``unsupported`` with
the reason and the ``pip install`` that would add it. All three are CUDA kernels; on a CPU
the row says so before anything is imported. They are opt-in (not in the default set that a
bare ``attnprof`` runs), because on a machine without them they add only refusal rows.

Layouts: flash-attn and xformers take [batch, seq, heads, head_dim] (the transpose of
attnprof's q/k/v, a view); ``flash_attn_varlen_func`` takes the batch packed into one
[total_tokens, heads, head_dim] with cumulative sequence lengths (here every sequence is
``seq`` long; ragged lengths come from ``--lengths``); FlashInfer's single-sequence
prefill/decode kernels take [seq, heads, head_dim] one sequence at a time.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING

from attnprof.variants.base import SUPPORTED, Built, Support, Variant
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

#: import name -> the pip command that installs it
PIP = {
    "flash_attn": "pip install flash-attn --no-build-isolation",
    "xformers": "pip install xformers",
    "flashinfer": "pip install flashinfer-python",
}


def _supports(module: str, workload: Workload) -> Support:
    if importlib.util.find_spec(module) is None:
        return Support(False, f"{module} is not installed; {PIP[module]} (needs CUDA)")
    if workload.device_type != "cuda":
        return Support(False, f"{module} runs only on CUDA; this run is on "
                              f"{workload.device_type}")
    if workload.dtype not in ("float16", "bfloat16") and module != "xformers":
        return Support(False, f"{module} takes float16 or bfloat16, not {workload.dtype}; "
                              "use --dtype bf16")
    return SUPPORTED


def _bshd(t: torch.Tensor) -> torch.Tensor:
    """[batch, heads, seq, dim] -> [batch, seq, heads, dim] (a view; the kernels' layout)."""
    return t.transpose(1, 2)


def _build_flash(workload: Workload) -> Built:
    from flash_attn import flash_attn_func  # type: ignore[import-not-found, unused-ignore]

    causal = workload.is_causal

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return flash_attn_func(_bshd(q), _bshd(k), _bshd(v), causal=causal).transpose(1, 2)

    return Built(call=call)


def _build_flash_varlen(workload: Workload) -> Built:
    import torch
    from flash_attn import flash_attn_varlen_func  # type: ignore[import-not-found, unused-ignore]

    b, sq, sk = workload.batch, workload.q_len, workload.k_len
    dev = workload.device
    cu_q = torch.arange(0, (b + 1) * sq, sq, dtype=torch.int32, device=dev)
    cu_k = torch.arange(0, (b + 1) * sk, sk, dtype=torch.int32, device=dev)
    causal = workload.is_causal

    def pack(t: torch.Tensor) -> torch.Tensor:  # [b, h, s, d] -> [b*s, h, d]
        return _bshd(t).reshape(-1, t.shape[1], t.shape[3])

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        out = flash_attn_varlen_func(pack(q), pack(k), pack(v), cu_q, cu_k, sq, sk,
                                     causal=causal)
        return out.view(b, sq, q.shape[1], q.shape[3]).transpose(1, 2)

    return Built(call=call, notes=("batch packed into one varlen sequence list",))


def _build_xformers(workload: Workload) -> Built:
    import xformers.ops as xops  # type: ignore[import-not-found, unused-ignore]

    groups = workload.groups
    bias = xops.LowerTriangularFromBottomRightMask() if workload.is_causal else None

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if groups > 1:  # the BMHK layout wants every head (a copy)
            k = k.repeat_interleave(groups, dim=1)
            v = v.repeat_interleave(groups, dim=1)
        out = xops.memory_efficient_attention(_bshd(q), _bshd(k), _bshd(v), attn_bias=bias)
        return out.transpose(1, 2)

    notes = ("K/V expanded with repeat_interleave",) if groups > 1 else ()
    return Built(call=call, notes=notes)


def _build_flashinfer(workload: Workload) -> Built:
    import flashinfer  # type: ignore[import-not-found, unused-ignore]
    import torch

    causal, decode = workload.is_causal, workload.mode == "decode"

    def one(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if decode:  # q [h, d], k/v [s, hk, d]
            return flashinfer.single_decode_with_kv_cache(q[:, 0], k.transpose(0, 1),
                                                          v.transpose(0, 1)).unsqueeze(1)
        out = flashinfer.single_prefill_with_kv_cache(q.transpose(0, 1), k.transpose(0, 1),
                                                      v.transpose(0, 1), causal=causal)
        return out.transpose(0, 1)

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.stack([one(q[i], k[i], v[i]) for i in range(q.shape[0])])

    return Built(call=call, notes=("one single-sequence kernel call per batch entry",))


def _variant(name: str, module: str, summary: str, build: object) -> Variant:
    return Variant(name=name, family="third-party", summary=summary,
                   build=build,  # type: ignore[arg-type]
                   supports=functools.partial(_supports, module))


THIRD_PARTY: tuple[Variant, ...] = (
    _variant("flash-attn", "flash_attn", "flash-attn's flash_attn_func (CUDA)", _build_flash),
    _variant("flash-attn-varlen", "flash_attn",
             "flash-attn's flash_attn_varlen_func on the packed batch (CUDA)",
             _build_flash_varlen),
    _variant("xformers", "xformers", "xformers.ops.memory_efficient_attention (CUDA)",
             _build_xformers),
    _variant("flashinfer", "flashinfer",
             "FlashInfer single-sequence prefill/decode kernels (CUDA)", _build_flashinfer),
)
