"""Implementations of a model ranked per phase, or said to tie: ``model --attn eager,sdpa``.

Two implementations' medians always differ a little; whether they differ beyond the noise
is a test. Every implementation of a phase is timed in the same interleaved rounds
(:mod:`attnprof.run.model_rounds`), so what the machine did meanwhile reached all of them
alike, and their samples can be set against each other. Each run is tested against the
fastest of its phase (the lowest median) by :func:`differs_beyond_noise`, the one call
that decides it: beyond the noise means both a significant test on the samples and a
difference of the medians larger than the noise margin (5%, or the samples' relative
spread when larger), the rule sweep and recommend tie variants by — with hundreds of
samples a test alone finds a 2% difference "significant" that the next run reverses.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from attnprof.analysis.diff.stats import mann_whitney_p
from attnprof.analysis.noise import differ, margin
from attnprof.measure.stats import summarize
from attnprof.record.diff import ALPHA
from attnprof.record.model import PhaseRun, Versus

__all__ = ["differs_beyond_noise", "rank_runs", "round_medians"]


def differs_beyond_noise(a: Sequence[float], b: Sequence[float]
                         ) -> tuple[float, float, bool]:
    """``(p, margin, differs)`` for samples ``a`` against ``b``: the two-sided Mann-Whitney
    U p-value (as ``attnprof diff``), the relative difference of the medians below which
    they tie (:func:`attnprof.analysis.noise.margin` of the relative IQRs), and whether
    they differ beyond the noise: ``p <= ALPHA`` and the medians differ beyond ``margin``."""
    sa, sb = summarize(list(a)), summarize(list(b))
    p = mann_whitney_p(a, b)
    spreads = (sa.relative_iqr, sb.relative_iqr)
    beyond = (sa.median > 0 and sb.median > 0
              and differ(sa.median, sb.median, *spreads))
    return p, margin(*spreads), p <= ALPHA and beyond


def rank_runs(runs: Sequence[PhaseRun]) -> None:
    """Set :attr:`PhaseRun.versus` on every measured run of a phase timed in interleaved
    rounds with at least one other (the others keep ``None``)."""
    phases = dict.fromkeys(r.phase for r in runs)
    for phase in phases:
        timed = [r for r in runs if r.phase == phase and r.status == "ok"
                 and r.latency_ms is not None and r.round_medians_ms]
        if len(timed) < 2:
            continue
        ordered = sorted(timed, key=lambda r: r.latency_ms.median if r.latency_ms else 0.0)
        fastest = ordered[0]
        assert fastest.latency_ms is not None
        base = fastest.latency_ms.median
        rounds = min(len(r.round_medians_ms or ()) for r in timed)
        fastest.versus = Versus(fastest=fastest.implementation, verdict="fastest", rank=1,
                                ratio=1.0, rounds=rounds)
        for place, run in enumerate(ordered[1:], start=2):
            assert run.latency_ms is not None
            p, noise, differs = differs_beyond_noise(fastest.latency_ms.samples,
                                                     run.latency_ms.samples)
            run.versus = Versus(fastest=fastest.implementation,
                                verdict="slower" if differs else "tie",
                                rank=place if differs else 1,
                                ratio=run.latency_ms.median / base if base > 0 else 1.0,
                                p_value=p, margin=noise, rounds=rounds)


def round_medians(rounds: Sequence[Sequence[float]]) -> list[float]:
    """The median of each round's samples (rounds with none are skipped)."""
    return [statistics.median(r) for r in rounds if r]
