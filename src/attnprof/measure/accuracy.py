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

from attnprof.spec.workload import Workload
from attnprof.variants.masks import expand_kv, workload_mask

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


def reference_output(inputs: Inputs, workload: Workload, window: int | None) -> torch.Tensor:
    """Attention in float64 on the workload's device, one batch entry at a time.

    Going one batch entry at a time bounds the float64 score tensor to H·Sq·Sk elements.
    """
    import torch

    scale = 1.0 / math.sqrt(workload.head_dim)
    allowed = workload_mask(workload, window)
    outs = []
    with torch.no_grad():
        for b in range(workload.batch):
            q = inputs.q[b].detach().to(torch.float64)
            k = expand_kv(inputs.k[b : b + 1].detach(), workload.groups)[0].to(torch.float64)
            v = expand_kv(inputs.v[b : b + 1].detach(), workload.groups)[0].to(torch.float64)
            scores = (q @ k.transpose(-2, -1)) * scale
            if allowed is not None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            outs.append(torch.softmax(scores, dim=-1) @ v)
    return torch.stack(outs)


def output_error(out: torch.Tensor, reference: torch.Tensor) -> tuple[float | None, int]:
    """How far ``out`` is from the (finite) float64 ``reference``: the largest absolute
    difference over its values (``None`` when some are not finite, which no number
    describes) and how many of its values are NaN or ±Inf."""
    import torch

    values = out.detach().to(torch.float64)
    nonfinite = int((~torch.isfinite(values)).sum())
    if nonfinite:
        return None, nonfinite
    return float((values - reference).abs().max()), 0
