"""Stragglers: in each step, the rank everyone else waited for.

A collective ends on every rank when the last one has joined it, so the rank that arrives
last spends the least time in it and the others spend the difference waiting. Per step
every rank ran (matched by ``ProfilerStep#N``), the *straggler* is the rank with the least
collective time, and its *extra* time is the median of the other ranks' collective time
minus its own. Waiting time compares across machines; clocks do not, so no timestamp of
one rank is compared with another's. A step whose latest rank was not later than the noise
(the rule below: two ranks alike to the microsecond, say) names no straggler.

A finding names a rank when it is the straggler in most steps (more than half, and at
least two) and its extra time, the median over those steps, stands out of the noise: at
least :data:`NOISE_FACTOR` times the interquartile range of all the ranks' step times
(how much steps vary with nothing planted: a busy machine, a descheduled process) and at
least :data:`MIN_SHARE` of the median step. A rank that is often last by less than that
is said in a note, with the figures, not called a straggler.
"""

from __future__ import annotations

import statistics

from attnprof import noise as noise_rule
from attnprof.formatting import format_us
from attnprof.record.finding import Finding
from attnprof.record.ranks import RankSummary, StepStraggler

__all__ = ["MIN_SHARE", "NOISE_FACTOR", "common_steps", "find_stragglers"]

#: The straggler's extra time must exceed this many step-time IQRs.
NOISE_FACTOR = 2.0
#: ... and this share of the median step time.
MIN_SHARE = 0.05


def common_steps(ranks: list[RankSummary]) -> list[int]:
    """The step numbers every one of ``ranks`` recorded, in order."""
    if not ranks:
        return []
    shared = set.intersection(*({s.step for s in r.steps} for r in ranks))
    return sorted(shared)


def find_stragglers(ranks: list[RankSummary]
                    ) -> tuple[list[StepStraggler], list[Finding], list[str]]:
    """Each common step's straggler, the finding (if a rank stands out) and notes.

    ``ranks`` are the readable ranks that have steps (at least two of them)."""
    notes: list[str] = []
    steps = common_steps(ranks)
    if len(ranks) < 2 or not steps:
        if len(ranks) >= 2:
            notes.append("the ranks share no ProfilerStep number: no step can be compared "
                         "across them (were they profiled over different steps?)")
        return [], [], notes
    noise = _noise(ranks, steps)
    table = [t for t in (_straggler_of(step, ranks, noise) for step in steps) if t is not None]
    if len(table) < len(steps):
        notes.append(f"{len(steps) - len(table)} of {len(steps)} steps have no collective "
                     "on some rank: no straggler can be told in them")
    if not table:
        return [], [], notes
    finding, note = _judge(table, noise)
    return table, [finding] if finding else [], notes + ([note] if note else [])


def _noise(ranks: list[RankSummary], steps: list[int]) -> tuple[float, float]:
    """How much step times vary with nothing planted: the IQR of every rank's times of
    ``steps``, and their median."""
    durations = [s.dur_us for r in ranks for s in r.steps if s.step in set(steps)]
    return noise_rule.iqr(durations), statistics.median(durations)


def _within_noise(extra: float, noise: tuple[float, float]) -> bool:
    """Whether ``extra`` time per step is within the noise: at most :data:`NOISE_FACTOR`
    step-time IQRs, or under :data:`MIN_SHARE` of the median step."""
    iqr, step = noise
    return extra <= NOISE_FACTOR * iqr or extra < MIN_SHARE * step


def _straggler_of(step: int, ranks: list[RankSummary],
                  noise: tuple[float, float]) -> StepStraggler | None:
    spent: dict[int, float] = {}
    for r in ranks:
        mine = next(s for s in r.steps if s.step == step)
        if mine.collectives == 0 or r.rank is None:
            return None
        spent[r.rank] = mine.collective_us
    # Least time waiting: the last to arrive (ties go to the lower rank, named first).
    straggler = min(spent, key=lambda rank: (spent[rank], rank))
    others = statistics.median(v for k, v in spent.items() if k != straggler)
    late = not _within_noise(others - spent[straggler], noise)
    return StepStraggler(step=step, straggler=straggler if late else None,
                         straggler_collective_us=spent[straggler],
                         others_collective_us=others, extra_us=others - spent[straggler],
                         ranks=list(spent), collective_us=list(spent.values()))


def _judge(table: list[StepStraggler], noise: tuple[float, float]
           ) -> tuple[Finding | None, str | None]:
    counts: dict[int, int] = {}
    for t in table:
        if t.straggler is not None:
            counts[t.straggler] = counts.get(t.straggler, 0) + 1
    iqr, step = noise
    if not counts:
        most = max(t.extra_us for t in table)
        return None, (f"no rank was later than the noise in any step (the last to join the "
                      f"collectives at most {format_us(most)} after the others; step times "
                      f"vary by {format_us(iqr)}, IQR over every rank and step; median step "
                      f"{format_us(step)}), so no straggler is named")
    rank, times = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
    if times * 2 <= len(table) or times < 2:
        return None, None
    mine = [t for t in table if t.straggler == rank]
    extra = statistics.median(t.extra_us for t in mine)
    said = (f"rank {rank} was the last to join the collectives in {times} of {len(table)} "
            f"steps, {format_us(extra)} per step after the others")
    if _within_noise(extra, noise):
        return None, (f"{said}: within the noise (step times vary by {format_us(iqr)}, IQR over "
                      f"every rank and step; median step {format_us(step)}), so it is not called "
                      "a straggler")
    evidence = [f"step {t.step}: rank {rank} spent {format_us(t.straggler_collective_us)} in "
                f"collectives, the others {format_us(t.others_collective_us)} (median): "
                f"{format_us(t.extra_us)} waiting for it" for t in mine]
    evidence.append(f"extra time per step {format_us(extra)} (median over those steps), "
                    f"{extra / step:.0%} of the median step of {format_us(step)}; step times vary "
                    f"by {format_us(iqr)} (IQR), so noise does not explain it")
    return Finding(
        rule="straggler", severity="warning",
        title=f"rank {rank} is the straggler: the others wait {format_us(extra)} per step for it "
              f"({times} of {len(table)} steps)",
        evidence=evidence,
        fix=f"find what rank {rank} does before each collective that the others do not: "
            "data loading or preprocessing on its host, a slower or throttled device, "
            "another job on its machine, a larger shard of the data or the model; compare "
            f"its trace with another rank's (attnprof analyze on rank {rank}'s file alone)",
        data={"rank": rank, "steps": times, "of": len(table), "extra_us_per_step": extra,
              "step_us": step, "step_iqr_us": iqr}), None
