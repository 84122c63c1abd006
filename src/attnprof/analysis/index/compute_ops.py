"""Which CPU ops did work: on a CPU-only trace they play the role of kernels.

On a GPU an expert counts kernels per forward. A CPU trace has no kernels, but its *compute
ops* are the same thing: the innermost ATen ops that actually touch tensor data
(``aten::bmm``, ``aten::_softmax``, the ``aten::copy_`` inside a clone, the fused
``aten::_scaled_dot_product_flash_attention_for_cpu``). An op is one when it is not
*structural* and none of the ops it called is a compute op (a *leaf*), or when the only work
it called was initialising its output (a *working parent*: ``aten::all`` fills its output
with ``aten::fill_``, then reduces in its own time — on a GPU, two kernels; SDPA's CPU
flash backward makes its gradients with ``aten::zeros``, then computes into them).
Factories (``aten::ones`` = allocate + ``fill_``) are not working parents: the fill is
all they do.
The rule is structural, not a share of time, so counts do not change with the shape. A
compute op's *work time* is its duration less that of the compute ops it called, so no
time is counted twice.

Structural ops do no arithmetic on tensor data, so counting them would make "kernels per
forward" depend on how ATen happens to decompose an op rather than on the work done:

* :data:`METADATA_OPS`: views and shape changes (they return an alias), allocation without
  initialisation, and composite ops that only forward to a child when work is needed
  (``aten::to`` calls ``aten::_to_copy``; ``aten::contiguous`` calls ``aten::clone``).
* Ops whose every recorded input is 0-dimensional: wrapping or converting a Python scalar
  (``aten::mul(t, 0.125)`` converts the scalar with ``to``/``_to_copy``/``copy_`` on 0-d
  tensors). On a GPU these stay on the CPU and launch nothing.

One exception among annotations: Inductor runs a compiled graph inside a
``## Call CompiledFxGraph ...`` range; its generated C++ kernel records no ATen op, so the
range itself is the compute op when nothing inside it is.
"""

from __future__ import annotations

import re

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import is_in, unique_pairs

__all__ = ["FACTORY_OPS", "INIT_OPS", "METADATA_OPS", "compute_ops", "is_structural"]

METADATA_OPS: frozenset[str] = frozenset({
    # views and aliases
    "aten::view", "aten::_unsafe_view", "aten::as_strided", "aten::transpose", "aten::t",
    "aten::expand", "aten::expand_as", "aten::reshape", "aten::_reshape_alias", "aten::permute",
    "aten::unsqueeze", "aten::squeeze", "aten::unsqueeze_", "aten::squeeze_", "aten::slice",
    "aten::select", "aten::narrow", "aten::unflatten", "aten::flatten", "aten::view_as",
    "aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind", "aten::movedim",
    "aten::resolve_conj", "aten::resolve_neg", "aten::detach", "aten::detach_", "aten::alias",
    "aten::lift_fresh", "aten::real", "aten::as_strided_",
    # allocation without initialisation
    "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::resize_",
    # composites that forward to a child when there is work to do
    "aten::to", "aten::contiguous", "aten::type_as",
})  # fmt: skip

# Framework bookkeeping around compiled code: it is dispatch overhead, never tensor work.
_BOOKKEEPING = re.compile(
    r"^(?:TorchDynamo|Torch-Compiled Region|Pregraph bytecode|AOTDispatcher|CompiledFunction)"
)
_COMPILED_GRAPH = re.compile(r"^## Call CompiledFxGraph")
#: Ops that only initialise their output; a parent whose only work is these does its own.
INIT_OPS: frozenset[str] = frozenset({"aten::fill_", "aten::zero_"})
#: Factories: allocation plus an initialising fill, and nothing else.
FACTORY_OPS: frozenset[str] = frozenset({
    "aten::ones", "aten::zeros", "aten::full", "aten::ones_like", "aten::zeros_like",
    "aten::full_like", "aten::new_ones", "aten::new_zeros", "aten::new_full",
    "aten::scalar_tensor", "aten::empty_like", "aten::fill_", "aten::zero_",
})


def is_structural(ops: OpIndex, i: int) -> bool:
    """True when op ``i`` does no arithmetic on tensor data (see the module doc)."""
    return _structural(ops.names[i], bool(ops.annotation[i]), ops.input_dims(i))


def _structural(name: str, annotation: bool, dims: list[object] | None) -> bool:
    if name in METADATA_OPS or _BOOKKEEPING.match(name):
        return True
    if annotation:
        return not _COMPILED_GRAPH.match(name)
    if not dims:
        return False
    return all(_is_scalar(d) for d in dims)


def _is_scalar(dims: object) -> bool:
    # An argument is 0-d (or not a tensor) when its dims list is empty.
    return isinstance(dims, list) and not dims


def structural(ops: OpIndex) -> np.ndarray:
    """:func:`is_structural` of every op, decided once per distinct (name, annotation,
    input dims) rather than once per op."""
    cache = ops.cache
    if "structural" not in cache:
        t = ops.trace.events
        kinds = unique_pairs(2 * ops.name.astype(np.int64) + ops.annotation,
                             t.input_dims[ops.row])
        flags = np.array([
            _structural(t.strings[kind // 2], bool(kind % 2), ops.parsed_json(dims))
            for kind, dims in zip(kinds.first.tolist(), kinds.second.tolist(), strict=True)],
            dtype=bool)
        cache["structural"] = flags[kinds.inverse] if len(ops) else np.zeros(0, dtype=bool)
    return cache["structural"]


def compute_ops(ops: OpIndex, span: range) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``span`` of the compute ops, in time order per thread, and their work
    time in µs (see the module doc)."""
    visits = np.arange(span.start, span.stop, dtype=np.int64)
    bound = np.full(len(visits), span.start, dtype=np.int64)
    chosen, own = compute_visits(ops, visits, bound, bound + len(span))
    return visits[chosen], own[chosen]


def compute_visits(ops: OpIndex, op: np.ndarray, lo: np.ndarray, hi: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """For ops visited as parts of contiguous spans: which are compute ops, and their work.

    ``op[v]`` is the op position of visit ``v``, ``[lo[v], hi[v])`` the span it belongs to;
    a span's visits are consecutive and in position order. Returns a mask over the visits
    and each visit's work time (meaningful where the mask is set). Only ops inside the same
    span count as an op's children, so an op near a window's end is judged by what the
    window holds of it.
    """
    size = len(op)
    if size == 0:
        return np.zeros(0, dtype=bool), np.zeros(0, dtype=np.float64)
    does_work = ~structural(ops)
    names = ops.name
    work = does_work[op]
    # Work anywhere below an op inside its span: a subtree is a position range, so a
    # running count of working ops answers it for every op at once.
    running = np.concatenate([[0], np.cumsum(does_work, dtype=np.int64)])
    stop = np.minimum(ops.last[op], hi - 1)
    work_below = running[stop + 1] - running[op + 1] > 0
    parent = ops.parent[op]
    # The parent's visit: the span's visits are consecutive, so it is as far back as the
    # parent's position is.
    bears = (parent >= lo) & (work | work_below)
    child = np.flatnonzero(bears)[::-1]  # last first: the sums add up in the order a
    into = child - (op[child] - parent[child])  # backward sweep over the span would
    dur = ops.dur
    below_us = np.bincount(into, weights=dur[op[child]], minlength=size)
    factory = is_in(names[op], _name_ids(ops, FACTORY_OPS))
    # A factory called for its output (aten::zeros: allocate + zero_) initialises too: the
    # parent that then computes into it (SDPA's CPU flash backward) is a working parent.
    init_like = is_in(names[op[child]], _name_ids(ops, INIT_OPS)) | factory[child]
    not_init = ~init_like | (work_below[child] & ~factory[child])
    only_init_below = np.bincount(into[not_init], minlength=size) == 0
    chosen = work & (~work_below | (only_init_below & ~factory))
    own = np.maximum(dur[op] - below_us, 0.0)
    return chosen, own


def _name_ids(ops: OpIndex, names: frozenset[str]) -> list[int]:
    strings = ops.trace.events.strings
    return [i for i in (strings.id_of(n) for n in sorted(names)) if i >= 0]
