"""Packing a padded batch's real tokens instead of attending over its padding.

For ``--mask padding`` (a batch padded to ``--seq``, each row ``length[b]`` real tokens),
the padded baseline is any variant taking the mask (``sdpa``, ``naive``, ...). These run the
same attention on the real tokens only, side by side with it:

* ``sdpa-unpadded``: SDPA on each sequence at its own length, one after another — the
  unpadded total that padding waste is measured against (same kernels, no padding);
* ``sdpa-jagged``: one SDPA call on a ``torch.nested`` jagged-layout NestedTensor;
* ``flex-document`` (compiled) and ``flex-document-eager``: the sequences packed into one
  row with a document block mask (each token attends within its own sequence);
* ``varlen``: flash-attn's ``flash_attn_varlen_func`` on the packed tokens (CUDA, flash-attn
  installed, fp16/bf16; otherwise ``unsupported`` with the reason).

They take the padded q, k, v like every variant (the comparison's inputs are shared). The
real tokens are packed once per set of inputs, outside the timed calls (a packed pipeline
holds its data packed); each timed call is the attention plus writing its output back into
the padded layout (zeros on padding), which the comparison checks on the real tokens.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attnprof.knowledge.sdpa_backends import sdpa_refusal
from attnprof.variants.base import SUPPORTED, Built, Support, Variant
from attnprof.variants.masks import expand_kv
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

_NOTE = ("real tokens packed once per input, untimed; timed: the attention and writing its "
         "output back into the padded layout")


def _supports(workload: Workload) -> Support:
    if workload.mask_kind != "padding":
        return Support(False, f"packs the real tokens of a padded batch: it runs "
                              f"--mask padding (with --lengths), not --mask "
                              f"{workload.mask_kind}")
    if workload.mode != "forward":
        return Support(False, f"measured in forward mode only, not {workload.mode}")
    if workload.q_len != workload.k_len:
        return Support(False, "packs equal query and key lengths; drop --kv-seq")
    return SUPPORTED


class _Packer:
    """The real tokens of a padded [B, H, S, D] tensor as [total, H, D], and back."""

    def __init__(self, lengths: tuple[int, ...], seq: int, device: str) -> None:
        import torch

        self.lengths = lengths
        self.seq = seq
        starts = torch.arange(len(lengths), device=device) * seq
        self.index = torch.cat([torch.arange(n, device=device) + starts[b]
                                for b, n in enumerate(lengths)])
        self.offsets = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()],
                                    device=device)
        self._key: tuple[tuple[int, int], ...] | None = None
        self._packed: tuple[torch.Tensor, ...] = ()

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        b, h, s, d = t.shape
        return t.transpose(1, 2).reshape(b * s, h, d).index_select(0, self.index)

    def packed(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``tensors`` packed, reused while they are the same tensors, unchanged."""
        key = tuple((t.data_ptr(), t._version) for t in tensors)
        if key != self._key:
            self._packed = tuple(self.pack(t) for t in tensors)
            self._key = key
        return self._packed

    def unpack(self, values: torch.Tensor) -> torch.Tensor:
        """[total, H, D] back to [B, H, S, D], zeros on padding."""
        import torch

        b, (_, h, d) = len(self.lengths), values.shape
        out = torch.zeros(b * self.seq, h, d, dtype=values.dtype, device=values.device)
        out.index_copy_(0, self.index, values)
        return out.view(b, self.seq, h, d).transpose(1, 2)


def _build_unpadded(workload: Workload) -> Built:
    import torch.nn.functional as F

    lengths, causal, gqa = workload.row_lengths(), workload.is_causal, workload.groups > 1

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        import torch

        out = torch.zeros_like(q)
        for b, n in enumerate(lengths):
            out[b:b + 1, :, :n] = F.scaled_dot_product_attention(
                q[b:b + 1, :, :n], k[b:b + 1, :, :n], v[b:b + 1, :, :n], is_causal=causal,
                enable_gqa=gqa)
        return out

    return Built(call=call, notes=("one SDPA call per sequence at its own length",))


def _build_jagged(workload: Workload) -> Built:
    import torch
    import torch.nn.functional as F

    packer = _Packer(workload.row_lengths(), workload.seq, workload.device)
    causal, groups = workload.is_causal, workload.groups

    def nested(values: torch.Tensor) -> torch.Tensor:
        return torch.nested.nested_tensor_from_jagged(values, packer.offsets).transpose(1, 2)

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        qp, kp, vp = packer.packed(q, expand_kv(k, groups), expand_kv(v, groups))
        out = F.scaled_dot_product_attention(nested(qp), nested(kp), nested(vp),
                                             is_causal=causal)
        return packer.unpack(out.transpose(1, 2).values())

    notes = [_NOTE]
    if groups > 1:
        notes.append("K/V expanded: jagged SDPA takes no enable_gqa")
    return Built(call=call, notes=tuple(notes))


def _explain_jagged(exc: BaseException, warnings: list[str], workload: Workload) -> str | None:
    reason = sdpa_refusal(None, exc, warnings, workload.device_type)
    if reason is not None and workload.is_causal:
        # PyTorch says why only in its log (torch/nested/_internal/sdpa.py), which the
        # runner does not capture as warnings.
        return ("PyTorch's jagged NestedTensor SDPA takes no is_causal=True ('Nested "
                "tensors for query / key are not supported when is_causal=True'): no "
                "backend ran; compare it with --no-causal, or use flex-document")
    return reason


def _build_document(workload: Workload, compiled: bool) -> Built:
    import torch
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    lengths = workload.row_lengths()
    packer = _Packer(lengths, workload.seq, workload.device)
    total, causal = sum(lengths), workload.is_causal
    doc = torch.repeat_interleave(torch.arange(len(lengths), device=workload.device),
                                  torch.tensor(lengths, device=workload.device))

    def mask_mod(b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor,
                 kv_idx: torch.Tensor) -> torch.Tensor:
        same = doc[q_idx] == doc[kv_idx]
        return same & (kv_idx <= q_idx) if causal else same

    block_mask = create_block_mask(mask_mod, B=None, H=None, Q_LEN=total, KV_LEN=total,
                                   device=workload.device)
    fn = torch.compile(flex_attention, dynamic=False) if compiled else flex_attention
    gqa = workload.groups > 1

    def row(values: torch.Tensor) -> torch.Tensor:  # [total, H, D] -> [1, H, total, D]
        return values.transpose(0, 1).unsqueeze(0)

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        qp, kp, vp = packer.packed(q, k, v)
        out = fn(row(qp), row(kp), row(vp), block_mask=block_mask, enable_gqa=gqa)
        return packer.unpack(out[0].transpose(0, 1))

    notes = [_NOTE, f"{len(lengths)} sequences packed into one row of {total} tokens"]
    if not compiled:
        notes.append("not compiled: materialises the full score matrix")
    return Built(call=call, notes=tuple(notes))


def _supports_flex(workload: Workload) -> Support:
    support = _supports(workload)
    if not support.ok:
        return support
    try:
        import torch.nn.attention.flex_attention  # noqa: F401  (a probe: torch>=2.5)
    except ImportError:
        return Support(False, "flex_attention needs torch>=2.5")
    return SUPPORTED


def _supports_varlen(workload: Workload) -> Support:
    support = _supports(workload)
    if not support.ok:
        return support
    if workload.device_type != "cuda":
        return Support(False, f"flash-attn's flash_attn_varlen_func runs on CUDA only, not "
                              f"{workload.device_type}")
    if workload.dtype not in ("float16", "bfloat16"):
        return Support(False, f"flash_attn_varlen_func takes float16 or bfloat16, not "
                              f"{workload.dtype}; pass --dtype bf16")
    try:
        _flash_attn().flash_attn_varlen_func  # noqa: B018  (a probe)
    except (ImportError, AttributeError) as exc:
        return Support(False, f"flash-attn is not installed ({exc}); pip install flash-attn")
    return SUPPORTED


def _flash_attn() -> Any:
    """flash-attn, imported by name (an optional package, only where it is installed)."""
    import importlib

    return importlib.import_module("flash_attn")


def _build_varlen(workload: Workload) -> Built:
    import torch

    flash_attn_varlen_func = _flash_attn().flash_attn_varlen_func
    lengths = workload.row_lengths()
    packer = _Packer(lengths, workload.seq, workload.device)
    cu = packer.offsets.to(torch.int32)
    longest, causal = max(lengths), workload.is_causal

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        qp, kp, vp = packer.packed(q, k, v)
        out = flash_attn_varlen_func(qp, kp, vp, cu, cu, longest, longest, causal=causal)
        return packer.unpack(out)

    return Built(call=call, notes=(_NOTE,))


def _variant(name: str, summary: str, build: Callable[[Workload], Built],
             supports: Callable[[Workload], Support] = _supports, **extra: object) -> Variant:
    return Variant(name=name, family="packing", summary=summary, build=build,
                   supports=supports, **extra)  # type: ignore[arg-type]


SDPA_UNPADDED = _variant("sdpa-unpadded", "SDPA on each sequence at its own length (the "
                         "unpadded total)", _build_unpadded)
SDPA_JAGGED = _variant("sdpa-jagged", "SDPA on a jagged-layout NestedTensor of the real "
                       "tokens", _build_jagged, explain_refusal=_explain_jagged)
FLEX_DOCUMENT = _variant("flex-document", "torch.compile(flex_attention) on the packed "
                         "tokens with a document block mask",
                         functools.partial(_build_document, compiled=True), _supports_flex,
                         compiled=True)
FLEX_DOCUMENT_EAGER = _variant("flex-document-eager", "flex_attention (not compiled) on the "
                               "packed tokens with a document block mask",
                               functools.partial(_build_document, compiled=False),
                               _supports_flex, materializes_scores=True)
VARLEN = _variant("varlen", "flash-attn flash_attn_varlen_func on the packed tokens",
                  _build_varlen, _supports_varlen)

#: The packing variants, run by default only on a padded batch (``--mask padding``).
PACKING: tuple[Variant, ...] = (SDPA_UNPADDED, SDPA_JAGGED, FLEX_DOCUMENT,
                                FLEX_DOCUMENT_EAGER, VARLEN)
