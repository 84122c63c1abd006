"""A distributed run's ranks, judged together: pure passes over per-rank summaries.

The flow, bottom to top::

    identify (which file is which rank) ─> summary (one rank's trace ─> RankSummary,
        in a worker) ─> judge_ranks: coverage notes ─> stragglers ─> divergence

:func:`judge_ranks` takes the summaries the workers returned (in any order) and gives
the straggler table, the findings and the notes on what could not be judged. Nothing
here reads a trace or starts a process: :mod:`attnprof.commands.analyze` does the fan-out.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnprof.analysis.ranks.divergence import find_divergence
from attnprof.analysis.ranks.naming import missing_ranks_text, ranks_text
from attnprof.analysis.ranks.stragglers import common_steps, find_stragglers
from attnprof.record.finding import Finding
from attnprof.record.ranks import RankSummary, StepStraggler

__all__ = ["Judgement", "judge_ranks", "order_ranks"]


@dataclass(frozen=True)
class Judgement:
    """What the ranks say together."""

    steps: list[StepStraggler]
    findings: list[Finding]
    notes: list[str]


def order_ranks(ranks: list[RankSummary]) -> list[RankSummary]:
    """By rank; files whose rank is unknown last, by path."""
    return sorted(ranks, key=lambda r: (r.rank is None, r.rank or 0, r.source))


def judge_ranks(ranks: list[RankSummary], world_size: int | None) -> Judgement:
    """The straggler table, the cross-rank findings and the notes for ``ranks``."""
    notes = coverage_notes(ranks, world_size)
    stepped = [r for r in ranks if r.error is None and r.steps and r.rank is not None]
    if len(stepped) < 2:
        notes.append("fewer than two ranks have readable steps: stragglers and divergence "
                     "cannot be judged")
        return Judgement(steps=[], findings=[], notes=notes)
    table, findings, said = find_stragglers(stepped)
    notes += said
    findings += find_divergence(stepped, common_steps(stepped))
    return Judgement(steps=table, findings=findings, notes=notes)


def coverage_notes(ranks: list[RankSummary], world_size: int | None) -> list[str]:
    """What the set lacks: ranks of the world not in it, unreadable ones, ones without
    steps, steps not every rank recorded, devices that differ."""
    notes = []
    present = {r.rank for r in ranks if r.rank is not None}
    read = sum(r.error is None for r in ranks)
    if world_size is not None:
        missing = world_size - len({r for r in present if 0 <= r < world_size})
        if missing > 0:
            notes.append(f"{missing_ranks_text(present, world_size)} of the world of "
                         f"{world_size} {'is' if missing == 1 else 'are'} not in the set: "
                         f"stragglers and divergence are judged among the {read} read")
    bad = [r for r in ranks if r.error is not None]
    if bad:
        named = sorted(r.rank for r in bad if r.rank is not None)
        unnamed = len(bad) - len(named)
        who = ", ".join(([ranks_text(named)] if named else [])
                        + ([f"{unnamed} file(s) of unknown rank"] if unnamed else []))
        notes.append(f"{who} could not be read (the rows say why): left out of the "
                     "comparison")
    stepless = sorted(r.rank for r in ranks
                      if r.error is None and not r.steps and r.rank is not None)
    if stepless:
        notes.append(f"{ranks_text(stepless)} recorded no ProfilerStep: left out of the "
                     "step comparison")
    stepped = [r for r in ranks if r.error is None and r.steps]
    every = set(common_steps(stepped))
    partial = sorted({s.step for r in stepped for s in r.steps} - every)
    if every and partial:
        notes.append(f"steps {_steps_text(partial)} are not in every rank's trace: ranks "
                     f"are compared over steps {_steps_text(sorted(every))}")
    devices = sorted({r.device for r in ranks if r.device})
    if len(devices) > 1:
        notes.append(f"the ranks ran on different devices ({', '.join(devices)}): their "
                     "times are not comparable")
    return notes


def _steps_text(steps: list[int]) -> str:
    return ranks_text(steps).removeprefix("ranks ").removeprefix("rank ") if steps else "none"
