"""How much of a region is attention: the "locate" question, asked of any trace.

A region pass (see :mod:`attnprof.analysis.passes`) over the one definition of the
attention time, :func:`~attnprof.analysis.passes.attention_time.attention_time`: the
attention core's work in the forward and in the backward (SDPA, flex and fused attention
ops and kernels and their backward, found by name; hand-written attention and its
backward, found by pattern and marked inferred). Work is device time on a GPU trace and
the compute ops' work time on a CPU trace, so the share is of the same quantity the kernel
table shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnprof.analysis.index.views import RegionView
from attnprof.analysis.passes.attention_time import (
    ATTENTION_OP,
    attention_time,
    summarize_attention,
)

__all__ = ["ATTENTION_OP", "measure_attention"]


def measure_attention(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``attention`` (the :class:`~attnprof.record.attention_time.AttentionTime`),
    ``attention_us_per_forward`` (forward + backward per instance) and ``attention_share``
    (None: no work at all)."""
    summary = summarize_attention(attention_time(view), on_device=view.on_device)
    return {"attention": summary, "attention_us_per_forward": summary.per_step_us,
            "attention_share": summary.share}
