"""Which CPU ops did work: on a CPU-only trace they play the role of kernels.

On a GPU an expert counts kernels per forward. A CPU trace has no kernels, but its *compute
ops* are the same thing: the innermost ATen ops that actually touch tensor data
(``aten::bmm``, ``aten::_softmax``, the ``aten::copy_`` inside a clone, the fused
``aten::_scaled_dot_product_flash_attention_for_cpu``). An op is one when it is not
*structural* and none of the ops it called is a compute op (a *leaf*), or when the only work
it called was initialising its output (a *working parent*: ``aten::all`` fills its output
with ``aten::fill_``, then reduces in its own time — on a GPU, two kernels). Factories
(``aten::ones`` = allocate + ``fill_``) are not working parents: the fill is all they do.
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
    name = ops.names[i]
    if name in METADATA_OPS or _BOOKKEEPING.match(name):
        return True
    if ops.annotation[i]:
        return not _COMPILED_GRAPH.match(name)
    dims = ops.input_dims(i)
    if not dims:
        return False
    return all(_is_scalar(d) for d in dims)


def _is_scalar(dims: object) -> bool:
    # An argument is 0-d (or not a tensor) when its dims list is empty.
    return isinstance(dims, list) and not dims


def compute_ops(ops: OpIndex, span: range) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``span`` of the compute ops, in time order per thread, and their work
    time in µs (see the module doc)."""
    if len(span) == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    lo, hi = span.start, span.stop
    names = ops.names[lo:hi]
    work = [not is_structural(ops, i) for i in span]
    size = hi - lo
    has_work_below = [False] * size
    only_init_below = [True] * size  # every compute-bearing child only initialises
    below_us = [0.0] * size  # time of the compute-bearing children
    parent = (ops.parent[lo:hi] - lo).tolist()
    dur = ops.dur[lo:hi].tolist()
    # Children come after their parent, so one backward sweep carries "work below" upward.
    for k in range(size - 1, -1, -1):
        p = parent[k]
        if 0 <= p < size and (work[k] or has_work_below[k]):
            has_work_below[p] = True
            below_us[p] += dur[k]
            if names[k] not in INIT_OPS or has_work_below[k]:
                only_init_below[p] = False
    chosen = [k for k in range(size) if work[k] and (
        not has_work_below[k] or (only_init_below[k] and names[k] not in FACTORY_OPS))]
    own = [max(dur[k] - below_us[k], 0.0) for k in chosen]
    return np.array(chosen, dtype=np.int64) + lo, np.array(own, dtype=np.float64)
