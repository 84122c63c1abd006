"""Numerical error of a variant against a float64 reference on the same inputs.

The reference is the textbook computation in float64 from the very same (already rounded)
inputs, so the error measures only what the variant's arithmetic loses. Tolerances follow
the dtype's precision with room for accumulation over the key length: about 2^-8 relative
for bfloat16's 8-bit mantissa, 2^-11 for float16, and float32's 24 bits. An output past
its tolerance, or with a NaN or an infinity, is ``wrong`` (:func:`attnprof.run.rows.result_row`):
a fast wrong answer is never an ``ok`` row.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from attnprof.variants.masks import build_mask
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch

    from attnprof.measure.inputs import Inputs

#: Largest acceptable max-abs error of the output, per dtype (unit-variance inputs).
TOLERANCE: dict[str, float] = {
    "float64": 1e-9,
    "float32": 1e-4,
    "float16": 5e-3,
    "bfloat16": 4e-2,
}


#: Bytes of float64 scores the reference holds at once: attnprof's own memory, kept small
#: so that it never decides whether a variant fits (a worker's memory cap, the device's).
REFERENCE_BLOCK_BYTES = 16 << 20


def reference_output(inputs: Inputs, workload: Workload, window: int | None) -> torch.Tensor:
    """Attention in float64 on the workload's device, a block of query rows at a time.

    One K/V head's query heads attend over a block of rows whose float64 scores take at
    most :data:`REFERENCE_BLOCK_BYTES` (one row at least), so the reference needs its output
    and a few blocks, not B·H·Sq·Sk scores: a variant that fits must not fail for the
    reference's sake. Each row's softmax is over all its keys, as in one piece.

    The mask is the workload's (:func:`attnprof.variants.masks.build_mask`, its bias
    rounded to the workload's dtype as the variants receive it). A query row that admits
    no key has no softmax: its reference output is zero, as SDPA's math backend and
    flex_attention give.
    """
    import torch

    scale = 1.0 / math.sqrt(workload.head_dim)
    groups, q_len, k_len = workload.groups, workload.q_len, workload.k_len
    rows = max(1, REFERENCE_BLOCK_BYTES // (groups * k_len * 8))
    out = torch.empty(workload.batch, workload.heads, q_len, workload.head_dim,
                      dtype=torch.float64, device=inputs.q.device)
    mask = build_mask(workload, window, inputs.q.device)
    bias = (None if mask.bias is None
            else mask.bias.to(getattr(torch, workload.dtype)).to(torch.float64))
    with torch.no_grad():
        for start in range(0, q_len, rows):
            block = slice(start, min(q_len, start + rows))
            for b in range(workload.batch):
                allowed = (None if mask.allowed is None
                           else mask.allowed[b if mask.allowed.shape[0] > 1 else 0, 0, block])
                for g in range(workload.num_kv_heads):
                    heads = slice(g * groups, (g + 1) * groups)
                    q = inputs.q[b, heads, block].detach().to(torch.float64)
                    k = inputs.k[b, g].detach().to(torch.float64)
                    v = inputs.v[b, g].detach().to(torch.float64)
                    scores = (q @ k.transpose(-2, -1)).mul_(scale)
                    if bias is not None:
                        scores += bias[0, heads, block]
                    if allowed is not None:
                        scores.masked_fill_(~allowed, float("-inf"))
                    probs = torch.softmax(scores, dim=-1)
                    if allowed is not None:  # a row with no key: zero, not NaN
                        probs = probs.masked_fill(~allowed.any(-1, keepdim=True), 0.0)
                    out[b, heads, block] = probs @ v
    return out


def scored_rows(workload: Workload) -> torch.Tensor | None:
    """Boolean [batch, 1, q_len, 1]: the query rows an output's error is taken over
    (``None``: all). A ``padding`` mask's padded query rows are left out: they hold no
    token, a model discards them, and a packed variant (``sdpa-jagged``,
    ``flex-document``) has no output for them."""
    import torch

    if workload.mask_kind != "padding":
        return None
    n = torch.tensor(workload.row_lengths(), device=workload.device).view(-1, 1, 1, 1)
    pos = torch.arange(workload.q_len, device=workload.device).view(1, 1, -1, 1)
    return pos + (workload.k_len - workload.q_len) < n


def output_error(out: torch.Tensor, reference: torch.Tensor,
                 rows: torch.Tensor | None = None) -> tuple[float | None, int]:
    """How far ``out`` is from the (finite) float64 ``reference``: the largest absolute
    difference over its values (``None`` when some are not finite, which no number
    describes) and how many of its values are NaN or ±Inf. ``rows``
    (:func:`scored_rows`): only those query rows count."""
    import torch

    values = out.detach().to(torch.float64)
    if rows is not None:
        keep = rows.expand(values.shape[0], values.shape[1], -1, values.shape[3])
        values, reference = values[keep], reference[keep]
    nonfinite = int((~torch.isfinite(values)).sum())
    if nonfinite:
        return None, nonfinite
    return float((values - reference).abs().max()), 0
