"""The record of ``attnprof recommend`` (kind ``recommend``): the sweep it decided from,
with the choice per shape (and the larger batches measured for the headroom) required.

A sweep record with a recommendation, so every sweep view (points, fits, plots) applies
to it and ``recommend --from`` reads either kind."""

from __future__ import annotations

import msgspec

from attnprof.record.sweep import SweepRecord

__all__ = ["RecommendRecord"]


class RecommendRecord(SweepRecord, tag="recommend", kw_only=True):
    """``attnprof recommend``: a sweep and the variant it recommends at each point (its
    ``recommendation``, set by the command)."""

    @classmethod
    def of_sweep(cls, sweep: SweepRecord) -> RecommendRecord:
        """``sweep``'s fields as a recommend record (its run id and times kept)."""
        return cls(**msgspec.structs.asdict(sweep))
