"""The record of ``attnprof recommend`` (kind ``recommend``): the sweep it decided from,
with the choice per shape (and the larger batches measured for the headroom) required.

A sweep record with a recommendation, so every sweep view (points, fits, plots) applies
to it and ``recommend --from`` reads either kind. The class is defined beside the sweep
record (:mod:`attnprof.record.sweep`), as every kind's subkinds are, so that
``SweepRecord.load`` reads it too; this module is its name by kind."""

from __future__ import annotations

from attnprof.record.sweep import RecommendRecord

__all__ = ["RecommendRecord"]
