"""Backward time, booked to the forward code it differentiates.

Labels are forward ranges: autograd runs the backward later, outside them. But every op
that records an autograd node carries a *sequence number*, and the engine's
``autograd::engine::evaluate_function: XBackward0`` range for that node carries the same
one. So each backward node's time goes to the label that held the forward op which created
it — the projection, the core, the MLP — and a layer's training time is its forward and its
backward, each where it belongs. Nodes without a forward op in the step (gradient
accumulation, the loss) stay with the model's ``unattributed``.
"""

from __future__ import annotations

import numpy as np

from attnprof.analysis.attribution.booking import Booking
from attnprof.analysis.attribution.labels import LabelIndex

__all__ = ["book_backward"]

_BACKWARD = "autograd::engine::evaluate_function: "


def book_backward(index: LabelIndex, booking: Booking) -> bool:
    """Add the step's backward nodes to ``booking``; True when any was attributed."""
    ops = index.ops
    root = booking.root
    lo, hi = root + 1, int(ops.last[root]) + 1
    seq = ops.trace.events.sequence_number[ops.row[lo:hi]]
    names = ops.names
    backward = [i for i in range(lo, hi) if names[i].startswith(_BACKWARD)]
    if not backward:
        return False
    inside_bwd = np.zeros(hi - lo, dtype=bool)
    for i in backward:
        inside_bwd[i - lo: int(ops.last[i]) + 1 - lo] = True
    forward_of: dict[int, int] = {}
    for k in np.flatnonzero((seq >= 0) & ~inside_bwd).tolist():
        forward_of.setdefault(int(seq[k]), k + lo)
    outer = [i for i in backward if not any(names[j].startswith(_BACKWARD)
                                            for j in ops.ancestors(i, root))]
    attributed_cpu = attributed_device = attributed_work = 0.0
    any_booked = False
    for i in outer:
        s = int(seq[i - lo])
        fwd = forward_of.get(s)
        if fwd is None:
            continue
        label = next((j for j in ops.ancestors(fwd, root) if j in index.labels), None)
        if label is None or label not in booking.where:
            continue
        layer, comp = booking.where[label]
        cpu, dev, work = index.cpu_us(i), index.device_us(i), index.work_us(i)
        entry = booking.booked[(layer, comp)]
        entry.cpu_us += cpu
        entry.device_us += dev
        entry.work_us += work
        attributed_cpu += cpu
        attributed_device += dev
        attributed_work += work
        any_booked = True
        if layer >= 0:
            booking.backward_of_layer[layer] = booking.backward_of_layer.get(layer, 0.0) + cpu
    rest = booking.booked[(-1, "unattributed")]
    rest.cpu_us = max(rest.cpu_us - attributed_cpu, 0.0)
    rest.device_us = max(rest.device_us - attributed_device, 0.0)
    rest.work_us = max(rest.work_us - attributed_work, 0.0)
    return any_booked
