"""How much of a forward is attention: the "locate" question, asked of any trace.

A region pass (see :mod:`attnprof.analysis.passes`). Work counts as attention when
it ran inside a recognised attention op — ``aten::scaled_dot_product_attention`` and the
backend ops it routes to, flex_attention's op — or, on a GPU, when the kernel itself is a
fused-attention kernel (flash, memory-efficient, cuDNN attention, flex/Triton attention),
which catches compiled graphs and CUDA graphs whose launching CPU op says nothing.

Work is device time on a GPU trace (kernels, copies and sets, durations summed) and the
compute ops' work time on a CPU trace, so the share is of the same quantity the kernel
table shows. Hand-written attention (``q @ k.T``, ``softmax``, ``@ v``) has no op that
names it, so it is not recognised: the share is a floor, and the report says so.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import distinct, is_in
from attnprof.analysis.index.views import RegionView
from attnprof.knowledge.kernel_names import decode_kernel_name

__all__ = ["ATTENTION_OP", "measure_attention"]

#: CPU ops that are attention, whatever ran below them.
ATTENTION_OP = re.compile(
    r"^aten::_?scaled_dot_product|^aten::_(?:flash|efficient)_attention|FlexAttention"
    r"|flex_attention"
)


def measure_attention(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``attention_us_per_forward`` and ``attention_share`` (None: no work at all)."""
    ops = view.ops
    # An empty index still has to answer for the clipped position 0 of unlinked events.
    inside = ops.inside(ATTENTION_OP) if len(ops) else np.zeros(1, dtype=bool)
    if view.on_device:
        dev = view.devices
        at = view.device_visits
        us = (dev.end[at] - dev.start[at]).astype(np.float64)
        op = dev.op[at]
        mine = is_in(dev.name[at], _fused_attention_names(ops, dev.name))
        mine |= (op >= 0) & inside[np.clip(op, 0, None)]
        bounds = view.device_bounds
    else:
        chosen = view.compute_mask
        us = view.compute_us[chosen]
        mine = inside[view.op_positions[chosen]]
        bounds = np.searchsorted(view.visit_instance[chosen], np.arange(view.n + 1))
    # Instance by instance, as a forward is summed, then the forwards added up in order.
    all_us, attention_us = us.tolist(), np.where(mine, us, 0.0).tolist()
    total = attention = 0.0
    for lo, hi in itertools.pairwise(bounds.tolist()):
        total += math.fsum(all_us[lo:hi])
        attention += math.fsum(attention_us[lo:hi])
    n = view.n or 1
    return {"attention_us_per_forward": attention / n,
            "attention_share": attention / total if total > 0 else None}


def _fused_attention_names(ops: OpIndex, names: np.ndarray) -> np.ndarray:
    """The name ids, among ``names``, of fused-attention kernels (decoded once per name)."""
    strings = ops.trace.events.strings
    return np.array([i for i in distinct(names).tolist()
                     if decode_kernel_name(strings[i]).is_attention], dtype=names.dtype)
