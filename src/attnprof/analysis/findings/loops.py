"""Attention in a Python loop: per head, per batch element or per query block.

``for h in range(H): out[h] = softmax(q[:, h] @ k[:, h].T) @ v[:, h]`` is correct and reads
naturally, but it turns one batched op into H small ones: the forward's op tree shows the
same short op group repeated H times, each repetition paying the dispatcher (and on a GPU
a kernel launch per op) for a fraction of the work. Found by shape in the op tree, never by
name: among the children of one op (the region's annotation, a module, ``## forward ##``),
a group of ops that contains attention's work (two products, or a product and a softmax,
or SDPA) repeated back to back.

A layer stack repeats too (twelve decoder layers are twelve look-alike groups), so a
repetition counts as a loop only with evidence that it walks one tensor: an index op
(``select``/``slice``/``narrow``) on the same-shaped tensor in every repetition, along a
dimension with as many entries (or blocks) as there are repetitions; or the repetitions'
results gathered by one ``stack``/``cat`` of exactly that many tensors; or one tensor split
(``unbind``/``split``/``chunk``) into that many just before. Without shapes in the trace
(``record_shapes=False``) only the gather counts.
"""

from __future__ import annotations

import functools
import math
from bisect import bisect_right
from collections import Counter

import msgspec
import numpy as np

from attnprof.analysis.findings.context import LIBRARY_ATTENTION, FindingContext, us_text
from attnprof.analysis.index.pairs import is_in
from attnprof.analysis.index.tensor_args import tensor_args
from attnprof.analysis.index.views import RegionView
from attnprof.formatting import counted
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.trace_report import Finding

__all__ = ["LoopCost", "LoopRun", "detect_looped_attention", "find_repeated_groups",
           "measure_loop"]

_PRODUCTS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum",
                       "aten::mm"})
_SOFTMAX = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax",
                      "aten::log_softmax"})
_SDPA = frozenset({"aten::scaled_dot_product_attention"})
_WORK = _PRODUCTS | _SOFTMAX | _SDPA
_INDEX = frozenset({"aten::select", "aten::slice", "aten::narrow", "aten::index_select"})
_GATHER = frozenset({"aten::stack", "aten::cat", "aten::concat", "aten::concatenate",
                     "aten::hstack", "aten::vstack"})
_SPLIT = frozenset({"aten::unbind", "aten::split", "aten::split_with_sizes", "aten::chunk",
                    "aten::tensor_split", "aten::unsafe_split"})
#: Longest op group considered (top-level ops of one loop body).
MAX_PERIOD = 64
# Where the gather or split is looked for, in sibling ops after or before the loop.
_NEAR = 3
# What a loop over dimension d of a [B, H, S, D] tensor walks.
_DIM_WORDS = {0: "batch element", 1: "head", 2: "query block", 3: "feature block"}


class LoopRun(msgspec.Struct, frozen=True):
    """A group of sibling ops repeated back to back: ``ops[start + r * period + j]`` is the
    ``j``-th op of repetition ``r``. Positions are in the :class:`OpIndex`."""

    siblings: tuple[int, ...]  # every sibling's op position, in order
    start: int  # index into ``siblings`` of the first op of the first repetition
    period: int
    repeats: int

    @property
    def ops(self) -> tuple[int, ...]:
        """The top-level ops of all repetitions."""
        return self.siblings[self.start: self.start + self.period * self.repeats]

    def repetition(self, r: int) -> tuple[int, ...]:
        """The top-level ops of repetition ``r``."""
        a = self.start + r * self.period
        return self.siblings[a: a + self.period]


def find_repeated_groups(names: np.ndarray, max_period: int = MAX_PERIOD
                         ) -> list[tuple[int, int, int]]:
    """Maximal back-to-back repeats in a sequence of name ids, as (start, period, repeats).

    For each period ``p``, a stretch where ``names[i] == names[i + p]`` holds for ``L >= p``
    positions in a row is ``L // p + 1`` repetitions of the ``p`` names that open it. Only
    repeats of at least two are returned; one found at a period is not repeated at its
    multiples (four repeats of a 9-op group are not also two of an 18-op group).
    """
    found: list[tuple[int, int, int]] = []
    m = len(names)
    # Kept runs by period: their starts and ends, in increasing start order. A long op
    # list (a training step's thousands of siblings) keeps thousands of runs, and testing
    # each new one against all of them was most of the analysis time.
    kept: dict[int, tuple[list[int], list[int]]] = {}
    for p in range(1, min(max_period, m // 2) + 1):
        eq = np.concatenate(([False], names[:-p] == names[p:], [False]))
        edges = np.flatnonzero(np.diff(eq.astype(np.int8)))
        # Stretches shorter than p are not repeats; most are, so drop them in numpy.
        starts, ends = edges[::2], edges[1::2]
        long = ends - starts >= p
        divisors = [q for q in kept if p % q == 0]
        starts_p: list[int] = []
        ends_p: list[int] = []
        for s, e in zip(starts[long].tolist(), ends[long].tolist(), strict=True):
            length = e - s
            end = s + length + p
            if any(_within(kept[q], s, end) for q in divisors):
                continue
            starts_p.append(s)
            ends_p.append(end)
            found.append((s, p, (length + p) // p))
        if starts_p:
            kept[p] = (starts_p, ends_p)
    return found


def _within(runs: tuple[list[int], list[int]], s: int, end: int) -> bool:
    """Whether ``[s, end)`` lies inside one of ``runs`` (kept at a period ``q`` dividing the
    caller's ``p``, so ``end - s >= 2p > q``).

    Only the last run starting at or before ``s`` can hold it: the runs of one period are
    the maximal stretches of ``names[i] == names[i + q]``, separated by at least one
    mismatch, so two of them overlap by less than ``q``, and a span of at least ``2p`` that
    starts inside an earlier run and also after a later one's start would have to fit in
    that overlap.
    """
    starts, ends = runs
    i = bisect_right(starts, s) - 1
    return i >= 0 and end <= ends[i]


def detect_looped_attention(ctx: FindingContext) -> list[Finding]:
    """Attention's work repeated once per head, batch element or query block (module doc)."""
    findings = []
    # Every step of a training loop has the same op sequences: their repeats are found once.
    groups: _Groups = {}
    masks = _op_masks(ctx)
    for region, view in ctx.regions():
        seen: dict[tuple[tuple[str, ...], int], list[tuple[int, LoopRun, str]]] = {}
        for k in range(view.n):
            for run, how in _loops_in_instance(ctx, view, k, groups, masks):
                key = (tuple(ctx.ops.names[i] for i in run.repetition(0)), run.repeats)
                seen.setdefault(key, []).append((k, run, how))
        if seen:
            key = max(seen, key=lambda g: (len(seen[g]), g[1] * len(g[0])))
            findings.append(_finding(ctx, region.name, view, seen[key]))
    return findings


# find_repeated_groups of name-id sequences already seen, keyed by dtype and bytes.
_Groups = dict[tuple[str, bytes], list[tuple[int, int, int]]]


def _op_masks(ctx: FindingContext) -> tuple[np.ndarray, np.ndarray]:
    """Per op, once per trace (a training trace has thousands of steps): whether it is
    attention work, and whether it is a library's attention op or inside one, whose inner
    ops (a fused kernel's decomposition, flex's blocks) are no user loop."""
    ops = ctx.ops
    strings = ops.trace.events.strings
    work = is_in(ops.name, [strings.id_of(name) for name in _WORK])
    library_ids = [i for i, text in enumerate(strings.values)
                   if any(o in text for o in LIBRARY_ATTENTION)]
    marked = np.flatnonzero(is_in(ops.name, library_ids))
    # An op's subtree is the positions i .. last[i]: one difference array over those ranges.
    cover = np.zeros(len(ops) + 1, dtype=np.int64)
    np.add.at(cover, marked, 1)
    np.add.at(cover, ops.last[marked] + 1, -1)
    return work, np.cumsum(cover[:-1]) > 0


def _loops_in_instance(ctx: FindingContext, view: RegionView, k: int, groups: _Groups,
                       masks: tuple[np.ndarray, np.ndarray]) -> list[tuple[LoopRun, str]]:
    ops = ctx.ops
    positions = view.instance_ops(k)
    if len(positions) == 0:
        return []
    work, in_library = masks
    parents = ops.parent[positions]
    counts = Counter(parents[work[positions]].tolist())
    out = []
    for owner in sorted(o for o, c in counts.items() if c >= 2):
        if owner >= 0 and in_library[owner]:
            continue
        siblings = positions[parents == owner]
        best = _best_loop(ctx, siblings, groups)
        if best is not None:
            out.append(best)
    return out


def _best_loop(ctx: FindingContext, siblings: np.ndarray, groups: _Groups
               ) -> tuple[LoopRun, str] | None:
    names = ctx.ops.names
    sib = tuple(siblings.tolist())
    candidates = []
    ids = ctx.ops.name[siblings]
    key = (ids.dtype.str, ids.tobytes())
    if key not in groups:
        groups[key] = find_repeated_groups(ids)
    for start, period, repeats in groups[key]:
        group = tuple(names[i] for i in sib[start: start + period])
        if not _is_attention_work(group):
            continue
        # Start each repetition at its first index op, the way a loop body reads.
        shift = next((j for j, n in enumerate(group) if n in _INDEX), 0)
        run_len = period * repeats + (period - 1)  # the periodic stretch, at most
        stretch = min(run_len, len(sib) - start) - shift
        reps = min(repeats, stretch // period)
        if reps < 2:
            continue
        run = LoopRun(siblings=sib, start=start + shift, period=period, repeats=reps)
        how = _loop_evidence(ctx, run)
        if how is not None:
            candidates.append((period * reps, -period, run, how))
    if not candidates:
        return None
    _, _, run, how = max(candidates, key=lambda c: (c[0], c[1]))
    return run, how


@functools.lru_cache(maxsize=4096)  # the same few op sequences recur in every step
def _is_attention_work(group: tuple[str, ...]) -> bool:
    products = sum(n in _PRODUCTS for n in group)
    return bool((products and (products >= 2 or any(n in _SOFTMAX | _SDPA for n in group)))
                or any(n in _SDPA for n in group))


def _loop_evidence(ctx: FindingContext, run: LoopRun) -> str | None:
    """Why ``run`` walks one tensor (the module doc's three signs), or ``None``."""
    return _indexed(ctx, run) or _gathered(ctx, run) or _split(ctx, run)


def _indexed(ctx: FindingContext, run: LoopRun) -> str | None:
    names = ctx.ops.names
    for j, op in enumerate(run.repetition(0)):
        if names[op] not in _INDEX:
            continue
        sources = {tuple(a[0].dims) if (a := tensor_args(ctx.ops, run.repetition(r)[j]))
                   else () for r in range(run.repeats)}
        if len(sources) != 1:
            continue
        (dims,) = sources
        for d, size in enumerate(dims):
            if size == run.repeats:
                blocks = f"{size} entries"
            elif (names[op] != "aten::select" and size > run.repeats
                  and _sliced_in_blocks(ctx, run, dims, d)):
                blocks = f"{size} entries, in blocks of {math.ceil(size / run.repeats)}"
            else:
                continue
            word = _DIM_WORDS.get(d, f"index of dim {d}") if len(dims) == 4 else (
                f"index of dim {d}")
            if names[op] == "aten::select" and d == 2 and len(dims) == 4:
                word = "query position"
            return (f"{names[op]} of {list(dims)} in every repetition walks dim {d} "
                    f"({blocks}): one repetition per {word}")
    return None


def _sliced_in_blocks(ctx: FindingContext, run: LoopRun, dims: tuple[int, ...], d: int) -> bool:
    """Whether a product in the loop body reads a ``dims``-like tensor cut into
    ``repeats`` blocks along ``d`` (a slice per repetition)."""
    block = math.ceil(dims[d] / run.repeats)
    for op in run.repetition(0):
        if ctx.ops.names[op] not in _PRODUCTS | _SDPA:
            continue
        for a in tensor_args(ctx.ops, op):
            if len(a.dims) == len(dims) and a.dims[d] in (block, dims[d] // run.repeats) and all(
                    x == y for i, (x, y) in enumerate(zip(a.dims, dims, strict=True)) if i != d):
                return True
    return False


def _gathered(ctx: FindingContext, run: LoopRun) -> str | None:
    end = run.start + run.period * run.repeats
    for op in run.siblings[end: end + _NEAR]:
        if ctx.ops.names[op] in _GATHER:
            dims = ctx.ops.input_dims(op)
            if dims and isinstance(dims[0], list) and len(dims[0]) == run.repeats and all(
                    isinstance(x, list) for x in dims[0]):
                return (f"{ctx.ops.names[op]} of {run.repeats} tensors "
                        f"{dims[0][0]} gathers the repetitions' results")
    return None


def _split(ctx: FindingContext, run: LoopRun) -> str | None:
    for op in run.siblings[max(run.start - _NEAR, 0): run.start]:
        if ctx.ops.names[op] not in _SPLIT:
            continue
        args = tensor_args(ctx.ops, op)
        if args and any(size == run.repeats for size in args[0].dims):
            return (f"{ctx.ops.names[op]} splits {list(args[0].dims)} into one piece per "
                    "repetition")
    return None


def _group_text(names: list[str]) -> str:
    parts: list[str] = []
    for name, n in _runs(names):
        parts.append(name if n == 1 else f"{name} ×{n}")
    return " → ".join(parts)


def _runs(names: list[str]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for name in names:
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + 1)
        else:
            out.append((name, 1))
    return out


class LoopCost(msgspec.Struct, frozen=True):
    """What a loop costs per forward, as far as the trace measures it."""

    loop_cpu_us: float  # CPU time from the first repetition's start to the last one's end
    compute_ops: float  # CPU compute ops inside the loop (CPU traces)
    work_us: float  # their work time (CPU traces)
    launches: float  # device events launched from inside the loop (GPU traces)
    device_us: float  # their summed device time
    kernels: tuple[str, ...]  # their distinct decoded names, first seen first


def measure_loop(ctx: FindingContext, view: RegionView, runs: list[tuple[int, LoopRun]]
                 ) -> LoopCost:
    """Per-forward cost of the loop ``runs`` (instance index, run), averaged over the region's
    forwards: an op's subtree is a contiguous range of positions, so everything a run's ops
    called, compute ops and device launches alike, lies between its first op and the end of
    its last op's subtree."""
    ops, devices, n = ctx.ops, ctx.devices, view.n or 1
    loop_us = work_us = 0.0
    compute = 0
    kernels: list[int] = []
    for k, run in runs:
        lo, hi = run.ops[0], int(ops.last[run.ops[-1]])
        loop_us += float(ops.end[run.ops[-1]] - ops.start[run.ops[0]])
        found, work = view.compute_of[k], view.compute_us_of[k]
        inside = (found >= lo) & (found <= hi)
        compute += int(inside.sum())
        work_us += math.fsum(work[inside].tolist())
        kernels += np.flatnonzero((devices.op >= lo) & (devices.op <= hi)).tolist()
    launched = np.array(kernels, dtype=np.int64)
    names = tuple(dict.fromkeys(decode_kernel_name(s).short
                                for s in ctx.device_names(launched))) if kernels else ()
    return LoopCost(loop_cpu_us=loop_us / n, compute_ops=compute / n, work_us=work_us / n,
                    launches=len(kernels) / n,
                    device_us=ctx.device_us(launched) / n if kernels else 0.0, kernels=names)


def _finding(ctx: FindingContext, region: str, view: RegionView,
             hits: list[tuple[int, LoopRun, str]]) -> Finding:
    _, first, how = hits[0]
    names = [ctx.ops.names[i] for i in first.repetition(0)]
    reps = first.repeats
    cost = measure_loop(ctx, view, [(k, run) for k, run, _ in hits])
    evidence = [f"{reps} repetitions per forward of {counted(len(names), 'op')}: "
                f"{_group_text(names)}", how]
    data: dict[str, object] = {
        "repeats": reps, "ops_per_repeat": len(names), "group": names,
        "loop_cpu_us_per_forward": cost.loop_cpu_us}
    if view.on_device:
        per = cost.launches / reps
        evidence.append(
            f"{counted(round(cost.launches, 2), 'kernel launch', 'kernel launches')} per "
            f"forward ({per:g} per repetition; batched, one pass launches {per:g}): "
            + ", ".join(cost.kernels))
        evidence.append(
            f"the loop's CPU dispatch {us_text(cost.loop_cpu_us)} per forward vs its kernels' "
            f"device time {us_text(cost.device_us)}"
            + (" — the device waits for Python" if cost.loop_cpu_us > cost.device_us else ""))
        data.update(kernels_per_forward=cost.launches, kernels_per_repeat=per,
                    device_us_per_forward=cost.device_us)
    else:
        per = cost.compute_ops / reps
        overhead = max(cost.loop_cpu_us - cost.work_us, 0.0)
        evidence.append(f"{cost.compute_ops:g} compute ops per forward ({per:g} per "
                        f"repetition; batched, one pass runs {per:g})")
        evidence.append(
            f"the loop takes {us_text(cost.loop_cpu_us)} of CPU per forward, "
            f"{us_text(cost.work_us)} of it in compute ops; the other {us_text(overhead)} is "
            f"dispatch and bookkeeping paid {reps}× over, of which one batched pass would "
            f"save about {us_text(overhead * (reps - 1) / reps)} (an estimate: one "
            "repetition's share stays)")
        data.update(compute_ops_per_forward=cost.compute_ops,
                    work_us_per_forward=cost.work_us, overhead_us_per_forward=overhead)
    variant = ctx.variant(ctx.report.region(region))
    evidence.append("the batched time is not in this trace: measure it beside this one, e.g. "
                    f"attnprof compare {variant or 'VARIANT'} sdpa")
    return Finding(
        rule="looped-attention", severity="warning", region=region,
        title=f"attention runs in a Python loop: {reps} repetitions of the same "
              f"{len(names)}-op group per forward",
        evidence=evidence,
        fix=("batch the loop: run every head (batch element, query block) in one call on "
             "[B, H, S, D] tensors, e.g. F.scaled_dot_product_attention(q, k, v, "
             "is_causal=..., enable_gqa=True), which takes all heads and grouped K/V at once; "
             "hand-written, index the head dimension instead of looping over it "
             "(q @ k.transpose(-2, -1) on the 4-D tensors)"),
        data=data,
    )
