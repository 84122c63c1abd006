"""Divergence: ranks that ran different code in the same steps.

Data-parallel ranks run the same model on different data, so each step should run the
same attention and the same kernels on every rank. Two findings:

* ``rank-divergence`` (critical): the attention differs — another SDPA backend (one rank on
  the math path while the rest run flash: a rank that fell back, say for another dtype or
  a mask), another fused-attention kernel, or another number of them per step. Names the
  rank(s), the ops or kernels that differ, and what the others ran.
* ``kernel-count`` (warning): the number of kernels (compute ops on a CPU) per step
  differs. Expected where ranks hold different shards (embedding tables, pipeline stages,
  experts), a sign of another code path otherwise: names the kernels whose count differs
  most.

Ranks are grouped by what they ran; the largest group is the reference. When no group is
larger than the others (two ranks that disagree), every group is listed: which one is
wrong cannot be told.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from attnprof.analysis.ranks.naming import ranks_text
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.finding import Finding
from attnprof.record.ranks import RankSummary

__all__ = ["find_divergence"]

#: Kernels whose per-step count differs, named in a kernel-count finding.
_NAMED_KERNELS = 5


def find_divergence(ranks: list[RankSummary], steps: list[int]) -> list[Finding]:
    """The divergence findings among ``ranks`` (readable ranks with steps), kernel counts
    compared over ``steps`` (those every rank recorded; all of each rank's when none)."""
    attention = _divergent_attention(ranks)
    counts = _divergent_kernel_counts(ranks, set(steps))
    if attention is not None and counts is not None \
            and set(counts.data["ranks"]) <= set(attention.data["ranks"]):
        # The other attention path is why the counts differ: one finding, both evidences.
        attention.evidence += counts.evidence
        counts = None
    return [f for f in (attention, counts) if f is not None]


def _groups(ranks: list[RankSummary], key: Callable[[RankSummary], Hashable]
            ) -> list[list[RankSummary]]:
    """Ranks grouped by ``key``, largest group first (then by lowest rank)."""
    groups: dict[Hashable, list[RankSummary]] = {}
    for r in ranks:
        groups.setdefault(key(r), []).append(r)
    return sorted(groups.values(), key=lambda g: (-len(g), _number(g[0])))


def _number(r: RankSummary) -> int:
    return r.rank if r.rank is not None else -1


def _numbers(group: list[RankSummary]) -> list[int]:
    return [_number(r) for r in group]


def _divergent_attention(ranks: list[RankSummary]) -> Finding | None:
    groups = _groups(ranks, lambda r: tuple(sorted((k, round(v, 3))
                                                   for k, v in r.attention.items())))
    if len(groups) < 2:
        return None
    reference, rest = _reference(groups)
    evidence = []
    for group in rest:
        theirs = group[0].attention
        # Without a majority, each group is set against another (which is right is unknown).
        other = reference or (groups[1] if group is groups[0] else groups[0])
        ours = other[0].attention
        evidence.append(f"{ranks_text(_numbers(group))} ran {_differing(theirs, ours)}"
                        f"{_backend(group[0])}"
                        + (f" where {ranks_text(_numbers(reference))} ran "
                           f"{_differing(ours, theirs)}{_backend(reference[0])}"
                           if reference else ""))
    odd = sorted(r for g in rest for r in _numbers(g))
    title = (f"{ranks_text(odd)} ran different attention than the other ranks"
             if reference else "the ranks ran different attention")
    return Finding(
        rule="rank-divergence", severity="critical", title=title, evidence=evidence,
        fix="make every rank take the same attention path: the same dtype, mask and "
            "shapes reach SDPA on each, and no rank pins another backend "
            "(torch.nn.attention.sdpa_kernel); a rank that fell back to the math path is "
            "slower and its numerics differ, so the others wait for it and the replicas "
            "drift apart",
        data={"ranks": odd, "reference": _numbers(reference) if reference else []})


def _per_step(r: RankSummary, steps: set[int]) -> float:
    """Kernels per step over ``steps`` (over all of the rank's steps when it has none of
    them)."""
    mine = [s.kernels for s in r.steps if s.step in steps] or [s.kernels for s in r.steps]
    return round(sum(mine) / len(mine), 3) if mine else 0.0


def _divergent_kernel_counts(ranks: list[RankSummary], steps: set[int]) -> Finding | None:
    groups = _groups(ranks, lambda r: _per_step(r, steps))
    if len(groups) < 2:
        return None
    reference, rest = _reference(groups)
    noun = "kernels" if ranks[0].kernel_source == "kernels" else "compute ops"
    base = reference or groups[0]
    evidence = [f"{ranks_text(_numbers(g))}: {_per_step(g[0], steps):g} {noun} per step"
                for g in ([reference] if reference else []) + rest]
    for group in rest if reference else groups[1:]:
        evidence.append(f"{ranks_text(_numbers(group))} vs {ranks_text(_numbers(base))}, "
                        "per step: " + _count_changes(group[0].kernels, base[0].kernels))
    odd = sorted(r for g in rest for r in _numbers(g))
    return Finding(
        rule="kernel-count", severity="warning",
        title=(f"{ranks_text(odd)} ran a different number of {noun} per step"
               if reference else f"the ranks ran different numbers of {noun} per step"),
        evidence=evidence,
        fix="expected when ranks hold different shards (embedding tables, pipeline stages, "
            "experts) or different data shapes; otherwise a rank took another code path "
            "(a fallback, a branch on the rank, a missing fusion): look at the kernels "
            "listed",
        data={"ranks": odd, "reference": _numbers(reference) if reference else []})


def _reference(groups: list[list[RankSummary]]
               ) -> tuple[list[RankSummary] | None, list[list[RankSummary]]]:
    """The largest group when it is larger than every other, and the rest."""
    if len(groups[0]) > len(groups[1]):
        return groups[0], groups[1:]
    return None, groups


def _differing(mine: dict[str, float], theirs: dict[str, float]) -> str:
    """What ``mine`` has that ``theirs`` has not (or has another count of), per step."""
    parts = [f"{name} ×{count:g}" for name, count in sorted(mine.items())
             if theirs.get(name) != count]
    return ", ".join(parts) + " per step" if parts else "no attention op"


def _backend(r: RankSummary) -> str:
    return f" (SDPA backend: {r.sdpa_backend})" if r.sdpa_backend else ""


def _count_changes(mine: dict[str, float], theirs: dict[str, float]) -> str:
    diff = {name: mine.get(name, 0.0) - theirs.get(name, 0.0) for name in {*mine, *theirs}}
    largest = sorted((n for n in diff if diff[n]), key=lambda n: (-abs(diff[n]), n))
    shown = [f"{decode_kernel_name(n).short} {diff[n]:+g}" for n in largest[:_NAMED_KERNELS]]
    more = len(largest) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")
