"""Booking a step's time to (layer, component): the walk over its labels.

Each label is either a *container* (a layer, an attention module), whose own time — its
duration less the labels directly inside it — is booked to ``unattributed`` (a layer) or
``attention_other`` (an attention module), or a *leaf* (a projection, the core, the MLP, a
norm ...), whose whole duration is booked to its component, the labels inside it included
(the SDPA call inside transformers' ``sdpa`` interface is part of that core). The step's
own time outside every label is the model's ``unattributed``. So components always sum to
their layer, and the layers and the model's parts to the step.

An attention module with no core label inside (hand-written attention, or
``nn.MultiheadAttention``'s fused path) books its own time as the ``core``, marked
``inferred``. Inside a ``cross_attention`` module every attention component carries the
``cross_`` prefix (``cross_q_proj`` ... ``cross_core``), so a decoder block's attention
over its own tokens and over the encoder's output stay apart.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from attnprof.analysis.attribution.labels import LabelIndex
from attnprof.knowledge.annotations import ATTENTION_ROLES, MODULE_ROLES, PARTS, Label
from attnprof.record.model_attribution import (
    ATTENTION_COMPONENTS,
    CROSS_PREFIX,
    SELF_COMPONENTS,
)

__all__ = ["ATTENTION_GROUP", "Booked", "Booking", "book_step", "component_of", "kind_of"]

#: Module roles that are components of their own (a layer and an attention module are
#: split into theirs); a part is its own component.
_LEAF_ROLES = frozenset(MODULE_ROLES) - {"layer", *ATTENTION_ROLES}
#: Components of the attention group (the rest of a layer is "rest").
ATTENTION_GROUP = frozenset(ATTENTION_COMPONENTS)


def kind_of(component: str) -> str:
    """``cross_attention`` or ``self_attention``: the kind of an attention component."""
    return "cross_attention" if component.startswith(CROSS_PREFIX) else "self_attention"


def component_of(label: Label, in_layer: bool) -> str:
    """The component a leaf label's time goes to."""
    if label.family == "part":
        return label.role if label.role in PARTS else "other"
    comp = label.role if label.role in _LEAF_ROLES else "other"
    if in_layer and comp in ("embedding", "head"):
        return "other"
    return comp


@dataclass
class Booked:
    """Time booked to one (layer, component) in one step."""

    cpu_us: float = 0.0
    device_us: float = 0.0
    work_us: float = 0.0
    labels: list[int] = field(default_factory=list)


@dataclass
class Booking:
    """One step's time by (layer label position or -1 for the model, component)."""

    root: int
    booked: dict[tuple[int, str], Booked] = field(
        default_factory=lambda: defaultdict(Booked))
    #: Layer label -> its layer name; label -> (layer, component) it was booked under.
    layer_names: dict[int, str] = field(default_factory=dict)
    where: dict[int, tuple[int, str]] = field(default_factory=dict)
    inferred_core: set[int] = field(default_factory=set)  # layers whose core is inferred
    #: Layer -> the attention module labels in it.
    attention: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    #: Backward CPU time booked to each layer (see :mod:`.backward`).
    backward_of_layer: dict[int, float] = field(default_factory=dict)

    def add(self, layer: int, comp: str, times: tuple[float, float, float],
            label: int) -> None:
        """Book (cpu, device, work) µs to ``(layer, comp)``, from label ``label``."""
        entry = self.booked[(layer, comp)]
        entry.cpu_us += times[0]
        entry.device_us += times[1]
        entry.work_us += times[2]
        entry.labels.append(label)


def book_step(index: LabelIndex, root: int) -> Booking:
    """Book every label of the step whose region op is ``root`` (see the module doc)."""
    booking = Booking(root=root)
    top = index.children(root)
    for label in top:
        _visit(index, booking, label, layer=-1, absorbed=None, prefix="")
    booking.add(-1, "unattributed", _own(index, root, top), root)
    return booking


def _times(index: LabelIndex, i: int) -> tuple[float, float, float]:
    return index.cpu_us(i), index.device_us(i), index.work_us(i)


def _own(index: LabelIndex, i: int, inner: list[int]) -> tuple[float, float, float]:
    """Op ``i``'s times less those of the labels directly inside it (never negative)."""
    mine = _times(index, i)
    held = [_times(index, c) for c in inner]
    return tuple(max(m - sum(h[k] for h in held), 0.0)  # type: ignore[return-value]
                 for k, m in enumerate(mine))


def _visit(index: LabelIndex, booking: Booking, i: int, layer: int,
           absorbed: tuple[int, str] | None, prefix: str) -> None:
    label = index.labels[i]
    inner = index.held.get(i, [])
    if absorbed is not None:
        booking.where[i] = absorbed
        for c in inner:
            _visit(index, booking, c, layer, absorbed, prefix)
        return
    container = label.family == "module" and label.role in ("layer", *ATTENTION_ROLES)
    if not container:
        comp = _prefixed(prefix, component_of(label, in_layer=layer >= 0))
        booking.add(layer, comp, _times(index, i), i)
        booking.where[i] = (layer, comp)
        for c in inner:
            _visit(index, booking, c, layer, (layer, comp), prefix)
        return
    if label.role == "layer" or layer < 0:  # an attention module outside every layer is one
        layer = i
        booking.layer_names[i] = label.detail
    if label.role == "layer":
        comp = "unattributed"
    else:
        prefix = CROSS_PREFIX if label.role == "cross_attention" else ""
        booking.attention[layer].append(i)
        has_core = any(index.labels[j].family == "part" and index.labels[j].role == "core"
                       for j in index.within(i))
        comp = prefix + ("attention_other" if has_core else "core")
        if not has_core:
            booking.inferred_core.add(layer)
    booking.add(layer, comp, _own(index, i, inner), i)
    booking.where[i] = (layer, comp)
    for c in inner:
        _visit(index, booking, c, layer, None, prefix)


def _prefixed(prefix: str, comp: str) -> str:
    """A component inside cross-attention is its ``cross_`` twin (attention's only)."""
    return prefix + comp if prefix and comp in SELF_COMPONENTS else comp
