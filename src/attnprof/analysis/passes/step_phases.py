"""Training steps split into phases: data, forward, loss, backward, optimizer, other.

A region pass (see :mod:`attnprof.analysis.passes`). A region whose instances ran
autograd's backward (``autograd::engine::evaluate_function: ...`` events) is a region of
training *steps*, whatever marks them (``ProfilerStep#N``, the user's own
``record_function``); a trace with no marks (the whole trace) has no steps to split.
Each step's wall time is cut into phases by what the trace shows:

* **backward**: the autograd engine's ``evaluate_function`` events, on whatever thread
  the engine ran them (on CUDA its own), with what runs under them;
* **optimizer**: ``Optimizer.step#AdamW.step`` and ``Optimizer.zero_grad#...`` (torch
  labels every optimizer's), and the user's labels naming an optimizer;
* **data**: ``enumerate(DataLoader)#...`` (torch labels each batch fetched) and the user's
  labels ``data``/``dataloader``;
* **loss**: the loss ops (``aten::cross_entropy_loss``, ``aten::nll_loss``,
  ``aten::mse_loss``, ...) outside backward, and the user's labels naming a loss;
* **forward**: the stretch before a loss (or before a backward not preceded by a loss);
* **other**: what none of these claims (the loop's own code after the optimizer).

Where marks overlap, the first in the list above wins; a stretch between two marks of the
same phase (the engine's own time between two backward functions) is that phase; the time
between a loss and its backward is the backward's (seeding the gradient). The phases of a
step add up to its wall time exactly. Attention's part of each phase, and each phase's
work, are counted from the items of the one attention time
(:func:`~attnprof.analysis.passes.attention_time.attention_items`: device time on a GPU
trace, outermost ops' time on a CPU one), so the phases' attention adds up to the region's
attention time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import distinct, names_matching
from attnprof.analysis.index.regions import WHOLE_TRACE
from attnprof.analysis.index.views import RegionView
from attnprof.analysis.passes.attention_time import attention_items
from attnprof.record.trace_report import PHASES, PhaseTime

__all__ = ["BACKWARD_OP", "split_steps"]

BACKWARD_OP = re.compile(r"^autograd::engine::evaluate_function: ")
_OPTIMIZER = re.compile(r"^Optimizer\.(?:step|zero_grad)#|(?i:^optimi[sz]er(?:[._ ]?step)?$)")
_DATA = re.compile(r"^enumerate\(DataLoader\)#|(?i:^data(?:[_ ]?load(?:er|ing))?$)")
_LOSS_OP = re.compile(r"^aten::(?:\w+_loss(?:_nd|2d)?|binary_cross_entropy(?:_with_logits)?"
                      r"|kl_div)$")
_LOSS_LABEL = re.compile(r"(?i)(?:^|[^a-z])loss(?:$|[^a-z])")
#: Marks by precedence: where two overlap, the earlier phase takes the time.
_MARKED = ("backward", "optimizer", "data", "loss")


def split_steps(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``phases`` (empty unless the region's instances ran a backward),
    ``instance_us`` and ``instance_attention_shares``."""
    ops = view.ops
    items = attention_items(view)
    n = view.n
    total = np.bincount(items.work_instance, weights=items.work_us, minlength=n)[:n]
    att = np.bincount(items.instance, weights=items.us, minlength=n)[:n]
    out: dict[str, Any] = {
        "instance_us": [inst.dur for inst in view.instances],
        "instance_attention_shares": [min(a / t, 1.0) if t > 0 else None
                                      for a, t in zip(att.tolist(), total.tolist(),
                                                      strict=True)],
        "phases": []}
    if not n or not len(ops) or view.name == WHOLE_TRACE:  # no step marks: no steps
        return out
    marks = _marks(ops)
    if not marks["backward"][view.op_positions].any():
        return out
    wall = np.zeros(len(PHASES))
    work_us = np.zeros(len(PHASES))
    att_us = np.zeros(len(PHASES))
    # Items come instance by instance: each step's are one slice.
    work_bounds = np.searchsorted(items.work_instance, np.arange(n + 1))
    att_bounds = np.searchsorted(items.instance, np.arange(n + 1))
    for k, inst in enumerate(view.instances):
        mine = view.instance_ops(k)
        cuts, labels = _segments(ops, mine, marks, inst.start, inst.end)
        np.add.at(wall, labels, np.diff(cuts))
        here = slice(int(work_bounds[k]), int(work_bounds[k + 1]))
        phase = _phase_of(ops, marks, items.work_op[here], items.work_ts[here], cuts, labels)
        np.add.at(work_us, phase, items.work_us[here])
        here = slice(int(att_bounds[k]), int(att_bounds[k + 1]))
        phase = _phase_of(ops, marks, items.op[here], items.ts[here], cuts, labels)
        np.add.at(att_us, phase, items.us[here])
    step = sum(inst.dur for inst in view.instances)
    out["phases"] = [_phase(name, float(wall[i]), float(work_us[i]), float(att_us[i]), n, step)
                     for i, name in enumerate(PHASES) if wall[i] > 0 or work_us[i] > 0]
    return out


def _phase(name: str, wall: float, work: float, attention: float, n: int, step: float
           ) -> PhaseTime:
    """One phase's figures per step, from its sums over the ``n`` steps (``step``: theirs)."""
    return PhaseTime(name=name, us=wall / n,
                     share=min(max(wall / step, 0.0), 1.0) if step > 0 else 0.0,
                     work_us=work / n, attention_us=attention / n,
                     attention_share=min(attention / work, 1.0) if work > 0 else None)


def _marks(ops: OpIndex) -> dict[str, np.ndarray]:
    """Per marked phase, which ops mark it (the ops themselves, not what runs under them)."""
    cache = ops.cache
    if "phase_marks" not in cache:
        text = ops.trace.events.strings.__getitem__
        annotation = ops.annotation
        cache["phase_marks"] = {
            "backward": names_matching(ops.name, text, BACKWARD_OP),
            "optimizer": annotation & names_matching(ops.name, text, _OPTIMIZER),
            "data": annotation & names_matching(ops.name, text, _DATA),
            "loss": (~annotation & names_matching(ops.name, text, _LOSS_OP))
                    | (annotation & names_matching(ops.name, text, _LOSS_LABEL)),
        }
    marks: dict[str, np.ndarray] = cache["phase_marks"]
    return marks


def _segments(ops: OpIndex, mine: np.ndarray, marks: dict[str, np.ndarray], start: float,
              end: float) -> tuple[np.ndarray, np.ndarray]:
    """One step's wall time cut into stretches: the cut points and each stretch's phase
    (an index into :data:`PHASES`)."""
    lo_of: list[np.ndarray] = []
    hi_of: list[np.ndarray] = []
    for name in _MARKED:
        at = mine[marks[name][mine]]
        lo_of.append(np.clip(ops.start[at], start, end))
        hi_of.append(np.clip(ops.end[at], start, end))
    cuts = distinct(np.concatenate([[start, end], *lo_of, *hi_of]))
    if len(cuts) < 2:
        return np.array([start, end]), np.array([PHASES.index("other")])
    mid = (cuts[:-1] + cuts[1:]) / 2
    label = np.full(len(mid), -1, dtype=np.int64)
    for name, lo, hi in zip(reversed(_MARKED), reversed(lo_of), reversed(hi_of), strict=True):
        covered = _covered(mid, lo, hi)
        label[covered] = PHASES.index(name)  # the earlier phase, written last, wins
    return cuts, _fill(label)


def _covered(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per point: whether some interval ``[lo, hi)`` holds it (intervals may overlap)."""
    if not len(lo):
        return np.zeros(len(points), dtype=bool)
    order = np.argsort(lo, kind="stable")
    lo, reach = lo[order], np.maximum.accumulate(hi[order])
    j = np.searchsorted(lo, points, side="right") - 1
    return (j >= 0) & (reach[np.clip(j, 0, None)] > points)


def _fill(label: np.ndarray) -> np.ndarray:
    """The phase of each unmarked stretch, from the marks around it (see the module doc):
    the marks before and after every stretch found at once (running max of positions)."""
    n = len(label)
    marked = label >= 0
    at = np.arange(n)
    last = np.maximum.accumulate(np.where(marked, at, -1))
    following = np.minimum.accumulate(np.where(marked, at, n)[::-1])[::-1]
    before = np.where(last >= 0, label[np.clip(last, 0, None)], -1)
    after = np.where(following < n, label[np.clip(following, 0, n - 1)], -1)
    forward, other = PHASES.index("forward"), PHASES.index("other")
    loss, backward = PHASES.index("loss"), PHASES.index("backward")
    fill = np.full(n, other, dtype=np.int64)
    fill[after == backward] = backward  # a backward seeded after its loss
    fill[(after == loss) | ((after == backward) & (before != loss))] = forward
    same = (before == after) & (before >= 0)
    fill[same] = before[same]
    return np.where(marked, label, fill)


def _phase_of(ops: OpIndex, marks: dict[str, np.ndarray], op: np.ndarray, ts: np.ndarray,
              cuts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The phase of each work item: the mark it ran under, else the stretch it started in."""
    at = np.clip(np.searchsorted(cuts, ts, side="right") - 1, 0, len(labels) - 1)
    phase = labels[at]
    known = op >= 0
    for name in reversed(_MARKED):
        under = np.zeros(len(op), dtype=bool)
        under[known] = _inside(ops, name, marks[name])[op[known]]
        phase[under] = PHASES.index(name)
    return phase


def _inside(ops: OpIndex, name: str, marked: np.ndarray) -> np.ndarray:
    """Per op: whether it or an op it runs inside is ``marked`` (a subtree is a position
    range: a difference array, then a running sum)."""
    key = f"inside_{name}_phase"
    cache = ops.cache
    if key not in cache:
        cache[key] = ops.subtrees(np.flatnonzero(marked))
    inside: np.ndarray = cache[key]
    return inside
