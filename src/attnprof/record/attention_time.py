"""The attention time of a region, as plain data: the one figure every command reports.

Computed by :func:`attnprof.analysis.passes.attention_time.attention_time` (the definition
is in that module's doc) and held by a region of a trace report
(:attr:`~attnprof.record.trace_report.RegionReport.attention`) and by a model attribution
(:attr:`~attnprof.record.model_attribution.ModelAttribution.attention_time`), so that
``analyze``, ``model``, ``diff`` and the ranks view read one number from one trace.
Times are µs per region instance (a step, or a forward in an inference trace).
"""

from __future__ import annotations

import msgspec

__all__ = ["AttentionTime"]


class AttentionTime(msgspec.Struct, kw_only=True):
    """Attention's time per instance of a region, split into forward and backward."""

    #: Forward + backward, µs per instance (``forward_us + backward_us``).
    per_step_us: float
    forward_us: float
    backward_us: float
    #: The part of ``per_step_us`` found by pattern (hand-written attention): inferred.
    inferred_us: float
    #: Of the region's whole work on the same basis (None: the region did no work).
    share: float | None
    #: What the time is: "device time" (kernels, copies and sets, summed) or "op time"
    #: (a CPU trace's time inside ATen ops: the outermost ones, so nothing twice).
    basis: str
    #: How it was found: "name" (SDPA, flex, fused-attention ops and kernels and their
    #: backward) and/or "pattern" (matmul → softmax → matmul and its backward: inferred).
    found_by: list[str] = msgspec.field(default_factory=list)
    #: The ops (CPU traces) or kernels counted, by name: how many per instance.
    forward_ops: dict[str, float] = msgspec.field(default_factory=dict)
    backward_ops: dict[str, float] = msgspec.field(default_factory=dict)
    #: Each instance's forward + backward, µs, in order (their spread is the noise).
    steps_us: list[float] = msgspec.field(default_factory=list)

    @property
    def inferred(self) -> bool:
        """True when any of the time was found by pattern rather than by name."""
        return "pattern" in self.found_by
