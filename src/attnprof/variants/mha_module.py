"""``nn.MultiheadAttention``, the module most code reaches for first.

The module owns its projections, so attnprof gives it identity in/out projections (zero
bias): its output then equals plain attention on the same q, k, v and can be checked against
the reference, while its time still includes what the module really does — the projection
GEMMs and the [B, H, S, D] <-> [B, S, H·D] layout changes. The module has no grouped K/V
heads, so with GQA the K/V heads are expanded before the call (counted in its time).
"""

from __future__ import annotations

from attnprof.variants.base import Built, Variant
from attnprof.variants.masks import build_mask, expand_kv, mask_window
from attnprof.workload.problem import Workload


def _build(workload: Workload) -> Built:
    import torch

    dtype = getattr(torch, workload.dtype)
    embed = workload.heads * workload.head_dim
    module = torch.nn.MultiheadAttention(embed, workload.heads, bias=True, batch_first=True,
                                         device=workload.device, dtype=dtype)
    with torch.no_grad():
        eye = torch.eye(embed, device=workload.device, dtype=dtype)
        module.in_proj_weight.copy_(torch.cat([eye, eye, eye]))
        module.in_proj_bias.zero_()
        module.out_proj.weight.copy_(eye)
        module.out_proj.bias.zero_()
    module.train(workload.mode == "forward+backward")
    b, h, d = workload.batch, workload.heads, workload.head_dim
    causal, groups = workload.is_causal, workload.groups
    mask = build_mask(workload, mask_window(workload))
    # nn.MultiheadAttention's boolean masks mean the opposite of SDPA's: True = blocked.
    # One [q, k] mask is shared by the batch; a per-row mask or a bias per head goes in as
    # the module's float [batch·heads, q, k] mask (-inf where blocked).
    blocked: torch.Tensor | None
    if mask.bias is None and (mask.allowed is None or mask.allowed.shape[0] == 1):
        blocked = None if mask.allowed is None else ~mask.allowed[0, 0]
    else:
        float_mask = mask.sdpa_mask(dtype)
        if float_mask is not None and float_mask.dtype == torch.bool:
            float_mask = torch.zeros_like(float_mask, dtype=dtype).masked_fill(
                ~float_mask, float("-inf"))
        assert float_mask is not None
        blocked = float_mask.expand(b, h, workload.q_len, workload.k_len).reshape(
            b * h, workload.q_len, workload.k_len)
        causal = False
    causal = causal and workload.plain_mask

    def to_embed(t: torch.Tensor) -> torch.Tensor:
        return t.transpose(1, 2).reshape(b, t.shape[2], h * d)

    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        k, v = expand_kv(k, groups), expand_kv(v, groups)
        out, _ = module(to_embed(q), to_embed(k), to_embed(v), attn_mask=blocked,
                        need_weights=False, is_causal=causal)
        return out.reshape(b, q.shape[2], h, d).transpose(1, 2)

    notes = ["identity in/out projections (their GEMMs are timed)"]
    if groups > 1:
        notes.append("K/V expanded: the module has no grouped heads")
    return Built(call=call, notes=tuple(notes))


MHA_MODULE = Variant(
    name="mha-module",
    family="mha-module",
    summary="torch.nn.MultiheadAttention (batch_first) with identity projections",
    build=_build,
)
