"""Contention read from a trace alone: the signs that a foreign trace's steps ran while
other work held their CPUs, and the finding that says so.

attnprof's own captures record the moment they were taken (the run-queue wait and page
faults of :mod:`attnprof.knowledge.capture_noise`); a trace someone else took carries
none of that, but shows the same thing in its timings. A thread that the scheduler parks
for another process stops mid-op or between ops for a scheduler slice (0.75 to 12 ms on
the development VM), so the op that was running, or the one that follows the pause,
takes far longer than *its peers*: the same op on the same shapes elsewhere in the trace.
Summed over a step, the time such ops spent beyond their fastest peer estimates the time
the step's threads waited for a CPU (on the development VM: 75-81% read from the trace
against 78% counted; 42% against 51% with a spinning process sharing the loop's CPU; 0 to
1.6% for quiet captures that Linux counted 0.1 to 0.6% for), and is held to the same
quiet threshold (:data:`~attnprof.knowledge.capture_noise.CONTENDED`). Steps that
disagree on their length beyond the noise rule (:func:`attnprof.analysis.noise.differ`)
or on attention's share (:data:`~attnprof.knowledge.capture_noise.STEP_SHARE_SPREAD`)
are the other sign: a burst of load during one step.

Op times are compared on CPU-only traces, whose figures are CPU time. On a GPU trace the
figures are device time, which a parked CPU thread does not stretch (it widens the gaps
between kernels), and CPU ops wait for the device in ways that vary from step to step; there
only disagreeing steps are reported.
"""

from __future__ import annotations

import re

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import names_matching, unique_pairs
from attnprof.analysis.index.regions import WHOLE_TRACE
from attnprof.analysis.index.views import RegionView
from attnprof.analysis.noise import TIE, differ
from attnprof.knowledge.capture_noise import CONTENDED, STEP_SHARE_SPREAD, contended
from attnprof.record.finding import Finding
from attnprof.record.trace_report import RegionReport, TraceContention

__all__ = ["STALL_RATIO", "STALL_US", "contention_findings", "read_contention"]

#: An op stalled when it took this many times its fastest peer, and ...
STALL_RATIO = 3.0
#: ... at least this much longer (µs): a quarter of the shortest scheduler slice seen, far
#: beyond the cache and allocator jitter of a quiet step's ops (tens of µs).
STALL_US = 250.0
_TOP_OPS = 5
#: Ops that wait for other ranks by design (a collective lasts until the last rank joins):
#: never judged against their peers, though the time after them is.
_WAITS_FOR_RANKS = re.compile(r"^c10d::|^record_param_comms$|^(?:gloo|mpi|ucc|nccl):")


def read_contention(views: list[RegionView], regions: list[RegionReport]
                    ) -> TraceContention | None:
    """The contention of the first region with two or more steps (``None`` when none has);
    ``regions`` are the views' reports (their instances' durations and shares)."""
    for view, region in zip(views, regions, strict=True):
        if view.n >= 2 and view.name != WHOLE_TRACE:
            return _contention(view, region)
    return None


def _contention(view: RegionView, region: RegionReport) -> TraceContention:
    durations = np.array([inst.dur for inst in view.instances], dtype=np.float64)
    stalled = np.zeros(view.n)
    top: list[tuple[str, int, float]] = []
    if not view.on_device:
        stalled, top = _stalls(view)
    fraction = np.divide(stalled, durations, out=np.zeros(view.n), where=durations > 0)
    fraction = np.clip(fraction, 0.0, 1.0)
    median = _median(fraction)
    shares = [s for s in region.instance_attention_shares if s is not None]
    longest, shortest = float(durations.max()), float(durations.min())
    disagree = bool(shortest > 0 and differ(longest, shortest, 0.0)) or (
        len(shares) >= 2 and max(shares) - min(shares) > STEP_SHARE_SPREAD)
    said = []
    if contended(median):
        said.append(f"the median step spent {median:.0%} of its time in ops that ran far "
                    "slower than their peers")
    elif disagree and contended(float(fraction.max())):
        k = int(fraction.argmax())
        said.append(f"step {k + 1} of {view.n} spent {fraction[k]:.0%} of its time in ops "
                    "that ran far slower than their peers")
    how = []
    if disagree:
        how.append(f"the steps took {shortest / 1e3:.3g} to {longest / 1e3:.3g} ms")
        if len(shares) >= 2 and max(shares) - min(shares) > STEP_SHARE_SPREAD:
            how.append(f"attention's share of a step ranged {min(shares):.0%} to "
                       f"{max(shares):.0%}")
    return TraceContention(
        region=view.name, stalled_us=stalled.tolist(), stalled_fraction=fraction.tolist(),
        median_stalled_fraction=median, stalled_ops=top, steps_disagree=disagree,
        disagreement="; ".join(how) or None, marked=bool(said),
        reason="; ".join(said + how) or None)


def _median(values: np.ndarray) -> float:
    """statistics.median of ``values`` (0 for none), as it computes it: neither np.median,
    which imports numpy.ma (15-25 ms) to check for a mask, nor statistics (1.5 ms more of
    analyze's start-up with fractions)."""
    if not len(values):
        return 0.0
    ordered, half = np.sort(values), len(values) // 2
    if len(values) % 2:
        return float(ordered[half])
    return float((ordered[half - 1] + ordered[half]) / 2)


def _stalls(view: RegionView) -> tuple[np.ndarray, list[tuple[str, int, float]]]:
    """Per step, the µs its ops spent beyond their fastest peer; the ops that did most.

    Each compute op is timed from the end of the previous one on its thread in the same
    step (the first from its own start), so a pause between ops counts against the op
    after it; on the step's own thread only: another thread's gaps are its idle time.
    """
    ops = view.ops
    chosen = view.compute_mask
    pos = view.op_positions[chosen]
    inst = view.visit_instance[chosen]
    if not len(pos):
        return np.zeros(view.n), []
    tid, pid = ops.tid[pos], ops.pid[pos]
    order = np.lexsort((ops.end[pos], tid, pid, inst))
    pos, inst, tid, pid = pos[order], inst[order], tid[order], pid[order]
    end, start = ops.end[pos], ops.start[pos]
    same = np.r_[False, (inst[1:] == inst[:-1]) & (tid[1:] == tid[:-1])
                 & (pid[1:] == pid[:-1])]
    prev = np.r_[start[:1], end[:-1]]
    own_tid = np.array([-1 if i.tid is None else i.tid for i in view.instances])[inst]
    since = np.where(same & (tid == own_tid), np.minimum(prev, start), start)
    took = np.maximum(end - since, 0.0)
    group = _peer_groups(ops.paths.of_op[pos], ops.trace.events.input_dims[ops.row[pos]],
                         inst)
    fastest = _group_fastest(took, group, int(group.max()) + 1)[group]
    counts = np.bincount(group)[group]
    judged = ~ops.inside(_WAITS_FOR_RANKS)[pos] & ~_overlaps_collective(ops, since, start)
    excess = np.where(judged & (counts >= 2) & (took > STALL_RATIO * fastest)
                      & (took - fastest > STALL_US), took - fastest, 0.0)
    per_step = np.bincount(inst, weights=excess, minlength=view.n)
    hit = excess > 0
    names = ops.name[pos[hit]]
    top: list[tuple[str, int, float]] = []
    if hit.any():
        found = unique_pairs(names, np.zeros(len(names), dtype=np.int64))
        total = np.bincount(found.inverse, weights=excess[hit])
        n = np.bincount(found.inverse)
        strings = ops.trace.events.strings
        for g in np.argsort(-total)[:_TOP_OPS].tolist():
            top.append((strings[int(found.first[g])], int(n[g]), float(total[g])))
    return per_step, top


def _overlaps_collective(ops: OpIndex, since: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per op: whether the pause before it overlaps a collective on any thread (the step's
    thread then waits for the other ranks, which is no sign of a held CPU)."""
    waits = np.flatnonzero(names_matching(ops.name, ops.trace.events.strings.__getitem__,
                                          _WAITS_FOR_RANKS))
    if not len(waits):
        return np.zeros(len(since), dtype=bool)
    order = np.argsort(ops.start[waits], kind="stable")
    lo = ops.start[waits][order]
    reach = np.maximum.accumulate(ops.end[waits][order])
    j = np.searchsorted(lo, start, side="left") - 1
    return (j >= 0) & (reach[np.clip(j, 0, None)] > since)


def _peer_groups(path: np.ndarray, dims: np.ndarray, inst: np.ndarray) -> np.ndarray:
    """Each op's group of peers (ops in order within each step): the ``k``-th call of the
    same op from the same call path on the same shapes in every step. Its place in the
    step matters as much as its name: the two residual adds of a block follow different
    code, and an add accumulating gradients in the backward yet another."""
    kind = unique_pairs(path, dims).inverse
    order = np.lexsort((np.arange(len(kind)), kind, inst))
    k, i = kind[order], inst[order]
    new = np.r_[True, (k[1:] != k[:-1]) | (i[1:] != i[:-1])]
    starts = np.flatnonzero(new)
    occurrence = np.empty(len(kind), dtype=np.int64)
    occurrence[order] = np.arange(len(kind)) - np.repeat(starts, np.diff(np.r_[starts,
                                                                                len(kind)]))
    return unique_pairs(kind, occurrence).inverse


def _group_fastest(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """The smallest of ``values`` in each group: the peer no wait stretched, when the load
    lasted through every step (then a median is itself a stalled time)."""
    out = np.full(groups, np.inf)
    np.minimum.at(out, group, values)
    return out


def contention_findings(found: TraceContention | None) -> list[Finding]:
    """The ``contended-trace`` warning when ``found`` is marked; the ``steps-disagree``
    note when its steps disagree with no op slowed to show why; else nothing."""
    if found is None:
        return []
    if not found.marked:
        if not found.disagreement:
            return []
        return [Finding(
            rule="steps-disagree", severity="info", region=found.region,
            title="the profiled steps disagree",
            evidence=[f"{found.disagreement} (within {TIE:.0%} of each other counts as the "
                      "same)", "no op ran far slower than its peers (on a GPU trace CPU ops "
                      "are not compared), so nothing says the CPUs were held: a step may do "
                      "other work (the first after warm-up, an evaluation, a checkpoint)"],
            fix="read the figures as the mean of different steps; to see one kind of step, "
                "profile more active steps or mark the steps with record_function and pass "
                "--region",
            data={"step_us_spread": found.disagreement})]
    evidence = [f"{found.reason} (quiet: under {CONTENDED:.0%} of a step beyond the peers, "
                f"steps within {TIE:.0%} of each other)"]
    if found.stalled_ops:
        evidence.append("slowest against their peers: " + ", ".join(
            f"{name} ×{n} (+{us / 1e3:.3g} ms)" for name, n, us in found.stalled_ops))
    evidence.append("an op that waits for a CPU (other processes running; or, on a VM, "
                    "its host stalling it) takes a scheduler slice longer than the same call "
                    "in the other steps: the step's times, phases and shares are those of a "
                    "contended moment (marked ‡)")
    return [Finding(
        rule="contended-trace", severity="warning", region=found.region,
        title="the trace was taken while other work held its CPUs",
        evidence=evidence,
        fix="retake it when the machine is quiet, or give the loop cores of its own "
            "(taskset -c, and torch.set_num_threads no more than those cores); profile "
            "more active steps (torch.profiler.schedule(active=5)) so one burst of load "
            "stands out against the others",
        data={"median_stalled_fraction": found.median_stalled_fraction,
              "stalled_fraction": list(found.stalled_fraction)})]
