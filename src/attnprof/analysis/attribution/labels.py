"""The model labels of a trace, indexed once: which ops are labels, and who holds whom.

A label is a ``user_annotation`` whose name parses as a model label
(:func:`attnprof.knowledge.annotations.parse_label`). Labels nest the way the code ran:
a projection inside its attention module inside its layer inside the step. Every time
figure of the attribution is a label's duration or the device events launched inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from attnprof.analysis.index.device_events import DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import names_matching
from attnprof.analysis.passes import outermost_cpu_ops
from attnprof.knowledge.annotations import MODULE_PREFIX, PART_PREFIX, Label, parse_label

__all__ = ["LabelIndex", "index_labels"]


@dataclass(frozen=True)
class LabelIndex:
    """Model labels by op position, and the device events by launching op."""

    ops: OpIndex
    devices: DeviceEvents
    labels: dict[int, Label]
    #: Label -> the labels directly inside it (-1: labels inside no other label).
    held: dict[int, list[int]]

    def __bool__(self) -> bool:
        return bool(self.labels)

    def within(self, root: int) -> list[int]:
        """Labels inside op ``root``'s subtree, in time order."""
        lo, hi = root + 1, int(self.ops.last[root]) + 1
        return [i for i in self._positions[(self._positions >= lo) & (self._positions < hi)
                                           ].tolist()]

    def children(self, root: int) -> list[int]:
        """The labels directly inside ``root``: held by it when it is a label, else the
        outermost labels in its subtree (``root`` is then a step region)."""
        if root in self.labels:
            return self.held.get(root, [])
        lo, hi = root, int(self.ops.last[root])
        return [i for i in self.held.get(-1, []) if lo < i <= hi]

    def cpu_us(self, i: int) -> float:
        """Wall time the CPU spent inside op ``i``, µs."""
        return float(self.ops.dur[i])

    def device_us(self, i: int) -> float:
        """Summed duration of the device events launched inside op ``i``, µs."""
        lo, hi = self._device_span(i)
        return float(np.sum(self._device_dur[lo:hi]))

    def work_us(self, i: int) -> float:
        """Time spent inside ATen ops within op ``i`` (outermost ones, so nothing twice), µs:
        the step's work without the Python, dispatch and profiler time between ops."""
        lo = int(np.searchsorted(self._compute[0], i, side="left"))
        hi = int(np.searchsorted(self._compute[0], int(self.ops.last[i]), side="right"))
        return float(self._compute[1][hi] - self._compute[1][lo])

    @cached_property
    def _compute(self) -> tuple[np.ndarray, np.ndarray]:
        """Outermost ATen op positions (ascending) and the running sum of their durations
        (0 first), so any subtree's op time is two binary searches."""
        found = np.flatnonzero(outermost_cpu_ops(self.ops))
        return found, np.concatenate([[0.0], np.cumsum(self.ops.dur[found])])

    def device_events(self, i: int) -> np.ndarray:
        """Positions (in :attr:`devices`) of the device events launched inside op ``i``."""
        lo, hi = self._device_span(i)
        return self._device_order[lo:hi]

    def _device_span(self, i: int) -> tuple[int, int]:
        ops = self._device_op
        return (int(np.searchsorted(ops, i, side="left")),
                int(np.searchsorted(ops, int(self.ops.last[i]), side="right")))

    @cached_property
    def _positions(self) -> np.ndarray:
        return np.array(sorted(self.labels), dtype=np.int64)

    @cached_property
    def _device_order(self) -> np.ndarray:
        return np.argsort(self.devices.op, kind="stable")

    @cached_property
    def _device_op(self) -> np.ndarray:
        return self.devices.op[self._device_order]

    @cached_property
    def _device_dur(self) -> np.ndarray:
        return (self.devices.end - self.devices.start)[self._device_order]


def index_labels(ops: OpIndex, devices: DeviceEvents) -> LabelIndex:
    """Every model label among the trace's annotations."""
    strings = ops.trace.events.strings
    annotations = np.flatnonzero(ops.annotation)
    positions = annotations[names_matching(
        ops.name[annotations], strings.__getitem__,
        f"^(?:{re.escape(MODULE_PREFIX)}|{re.escape(PART_PREFIX)})")]
    labels = {}
    for i in positions.tolist():
        parsed = parse_label(ops.names[i])
        if parsed is not None:
            labels[i] = parsed
    held: dict[int, list[int]] = {}
    for i in labels:  # positions ascend, so each list stays in time order
        parent = next((j for j in ops.ancestors(i) if j in labels), -1)
        held.setdefault(parent, []).append(i)
    return LabelIndex(ops=ops, devices=devices, labels=labels, held=held)
