"""Traffic: the bytes a step's operators read and write, modelled from the shapes and
dtypes a profiler records for each op (``record_shapes``: "Input Dims" / "Input type").

It is a model, not a counter reading. Each counted op reads each tensor it is given once,
whole, and writes its output once; the output's shape is inferred from the inputs
(:func:`output_shape`): matrix products by their rule, SDPA kernels as the query with the
value's head size, reductions as nothing (at most a row per input row: small beside the
input), concatenation as the sum of its inputs, every other op as its inputs broadcast
together (elementwise ops, softmax, masked_fill, copies), and, where they do not
broadcast, as its largest input (counted in :attr:`Traffic.assumed`). An in-place op
(``add_``, ``masked_fill_``) writes its first input; ``copy_`` reads its source and writes
its destination. Caches are ignored: a tensor re-read from L2 counts again, as the bytes
an op asks for, which is what a roofline's intensity is about.

Only the *leaf compute ops* are counted, so that no byte is counted twice: ops that move
no data (views, reshapes that alias, allocations: :data:`NO_DATA`; ops given no tensor of
more than one element, such as the scalar a ``mul`` by a Python float wraps) count
nothing, and an op is counted only when no compute op ran inside it (``aten::matmul`` is
not counted, the ``aten::bmm`` it calls is; ``aten::softmax`` is not, ``aten::_softmax``
is; an SDPA kernel whose children only allocate and view is).

Beside it, the *I/O floor* (:func:`attnprof.workload.costs.step_bytes`: Q, K, V read and O
written once) is what any attention must move; naive attention's traffic is several
times its floor, because it writes and re-reads the S×S scores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["DTYPE_BYTES", "NO_DATA", "OpShapes", "Traffic", "leaf_compute_ops",
           "op_bytes", "output_shape", "traffic"]

#: Bytes per element of each dtype name the profiler records ("Input type").
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
    "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
}

#: Ops that move no data: views and aliases, metadata, and allocations (an allocation's
#: first write is the op that fills it).
NO_DATA = frozenset(f"aten::{n}" for n in (
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "transpose", "t",
    "permute", "expand", "expand_as", "unsqueeze", "squeeze", "select", "slice", "narrow",
    "split", "split_with_sizes", "unbind", "chunk", "alias", "detach", "detach_",
    "lift_fresh", "resolve_conj", "resolve_neg", "contiguous", "to", "type_as", "view_as",
    "flatten", "unflatten", "movedim", "numpy_T", "empty", "empty_like", "empty_strided",
    "set_", "result_type", "is_nonzero", "item", "_local_scalar_dense", "size", "stride",
    "dim", "is_same_size", "_has_compatible_shallow_copy_type", "requires_grad_",
    "retain_grad", "_version", "output_nr", "_nested_tensor_from_mask_left_aligned",
    "_propagate_xla_data", "record_stream", "_to_copy_meta"))

#: Events of work the profiler records no ops for: an Inductor-compiled graph's generated
#: kernels (``## Call CompiledFxGraph … ##``; compiled flex_attention records no aten op
#: at all). A step that ran one has traffic this model cannot see. Dynamo's region alone
#: is no such sign: flex-eager runs in one with every aten op recorded.
OPAQUE = re.compile(r"CompiledFxGraph")

#: Reductions: their output is not counted (at most one value per reduced row).
_REDUCTIONS = frozenset(f"aten::{n}" for n in (
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "norm",
    "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "prod", "logsumexp",
    "any", "all", "count_nonzero", "allclose", "equal"))

_SDPA_KERNELS = frozenset(f"aten::{n}" for n in (
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
    "_flash_attention_forward", "_efficient_attention_forward",
    "scaled_dot_product_attention", "_scaled_dot_product_attention_math",
    "_scaled_dot_product_fused_attention_overrideable"))

#: Ops whose output is a bool tensor.
_BOOL_OUT = frozenset(f"aten::{n}" for n in (
    "eq", "ne", "lt", "le", "gt", "ge", "isinf", "isnan", "isneginf", "isposinf",
    "isfinite", "logical_and", "logical_or", "logical_not", "logical_xor"))

_SDPA_BACKWARD = frozenset(f"{n}_backward" for n in _SDPA_KERNELS)


@dataclass(frozen=True)
class OpShapes:
    """One op as a profiler records it: its name, the dims and type of each input (an
    input that is not a tensor has an empty type or one not in :data:`DTYPE_BYTES`), and
    when and on which thread it ran (which op ran inside which)."""

    name: str
    dims: Sequence[Sequence[int]]
    types: Sequence[str]
    start: float
    end: float
    thread: int = 0


@dataclass(frozen=True)
class Traffic:
    """Bytes read and written by a step's leaf compute ops under the module's model."""

    read_bytes: int
    written_bytes: int
    #: Leaf compute ops counted.
    ops: int
    #: Of them, ops whose output was taken as their largest input (no rule fitted).
    assumed: int

    @property
    def total_bytes(self) -> int:
        """Bytes read plus bytes written."""
        return self.read_bytes + self.written_bytes


def _typed(op: OpShapes) -> list[tuple[list[int], int, str]]:
    """The op's tensor inputs: (dims, element bytes, dtype name)."""
    out = []
    for dims, kind in zip(op.dims, op.types, strict=False):
        size = DTYPE_BYTES.get(kind)
        if size is not None and isinstance(dims, Sequence) and all(
                isinstance(d, int) for d in dims):
            out.append((list(dims), size, kind))
    return out


def _tensors(op: OpShapes) -> list[tuple[list[int], int]]:
    """The op's tensor inputs: (dims, element bytes)."""
    return [(d, e) for d, e, _ in _typed(op)]


def _numel(dims: Sequence[int]) -> int:
    return math.prod(dims) if dims else 1


def _broadcast(shapes: Sequence[Sequence[int]]) -> list[int] | None:
    """The shapes broadcast together (``None`` where they do not broadcast)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d != out[i] and d != 1 and out[i] != 1:
                return None
            out[i] = max(out[i], d) if d != 0 and out[i] != 0 else 0
    return out


def output_shape(name: str, dims: Sequence[Sequence[int]]) -> list[int] | None:
    """The output shape of ``name`` given its tensor inputs' ``dims`` under the module's
    model; ``[]`` for a reduction (not counted); ``None`` where no rule fits."""
    if name in _REDUCTIONS:
        return []
    if name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
                "aten::_addmm_activation"):
        a, b = (dims[-2], dims[-1]) if len(dims) >= 2 else (None, None)
        if a is None or b is None or len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
            return None
        batch = _broadcast([a[:-2], b[:-2]])
        return None if batch is None else [*batch, a[-2], b[-1]]
    if name == "aten::linear" and dims and len(dims[0]) >= 1 and len(dims) >= 2:
        return [*dims[0][:-1], dims[1][0]] if dims[1] else None
    if name in _SDPA_KERNELS and len(dims) >= 3:
        q, v = dims[0], dims[2]
        return [*q[:-1], v[-1]] if q and v else None
    if name in _SDPA_BACKWARD and len(dims) >= 4:  # (grad_out, q, k, v, ...) -> dq, dk, dv
        return [sum(_numel(d) for d in dims[1:4])]
    if name in ("aten::cat", "aten::stack", "aten::_cat"):
        return [sum(_numel(d) for d in dims)]
    return _broadcast(dims)


def op_bytes(op: OpShapes) -> tuple[int, int, bool]:
    """``(read, written, assumed)`` bytes of one op under the model (``assumed``: its
    output taken as its largest input)."""
    tensors = _tensors(op)
    if not tensors:
        return 0, 0, False
    if op.name == "aten::copy_" and len(tensors) >= 2:
        (dst, dst_size), (src, src_size) = tensors[0], tensors[1]
        return _numel(src) * src_size, _numel(dst) * dst_size, False
    read = sum(_numel(d) * e for d, e in tensors)
    if op.name.endswith("_") and not op.name.endswith("__"):  # in place: writes its first
        dims, size = tensors[0]
        return read, _numel(dims) * size, False
    shape = output_shape(op.name, [d for d, _ in tensors])
    # The output's element: a comparison's is a bool; else the largest non-bool input's
    # (``where(mask, x, y)`` writes x's dtype, not the mask's; ``x * 0.5`` x's, not the
    # wrapped scalar's double).
    values = [(_numel(d), e) for d, e, kind in _typed(op) if kind != "bool"]
    element = 1 if op.name in _BOOL_OUT or not values else max(values)[1]
    if shape is None:
        largest = max(_numel(d) * e for d, e in tensors)
        return read, largest, True
    if op.name in _REDUCTIONS:
        return read, 0, False
    return read, _numel(shape) * element, False


def _moves_data(op: OpShapes) -> bool:
    """An ``aten::`` op not in :data:`NO_DATA` given a tensor of more than one element."""
    return (op.name.startswith("aten::") and op.name not in NO_DATA
            and any(_numel(d) > 1 for d, _ in _tensors(op)))


def leaf_compute_ops(ops: Iterable[OpShapes]) -> list[OpShapes]:
    """The ``aten::`` ops that move data (see the module doc) and ran no such op inside
    them, on the same thread."""
    compute = sorted((o for o in ops if _moves_data(o)),
                     key=lambda o: (o.thread, o.start, -o.end))
    leaves = []
    for i, op in enumerate(compute):
        nxt = compute[i + 1] if i + 1 < len(compute) else None
        # Sorted by start (the outer op first on a tie): a child is the next op on the
        # thread, starting before this one ends.
        has_child = (nxt is not None and nxt.thread == op.thread
                     and nxt.start < op.end and nxt.end <= op.end)
        if not has_child:
            leaves.append(op)
    return leaves


def traffic(ops: Iterable[OpShapes]) -> Traffic | None:
    """The traffic of the ops a step ran (every event the profiler recorded in it);
    ``None`` where the model cannot tell: the step ran a compiled graph (:data:`OPAQUE`),
    whose kernels record no ops, or no op that moves data was recorded."""
    events = list(ops)
    if any(OPAQUE.search(o.name) for o in events):
        return None
    read = written = assumed = 0
    leaves = leaf_compute_ops(events)
    if not leaves:
        return None
    for op in leaves:
        r, w, guessed = op_bytes(op)
        read, written, assumed = read + r, written + w, assumed + guessed
    return Traffic(read_bytes=read, written_bytes=written, ops=len(leaves), assumed=assumed)
