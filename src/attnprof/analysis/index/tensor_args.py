"""The tensor arguments of a recorded op: shapes and dtypes from ``record_shapes=True``.

torch.profiler records, per op, ``Input Dims`` (one list per argument, ``[]`` for scalars
and non-tensors) and ``Input type`` (the C++ scalar type name, e.g. ``float``,
``c10::BFloat16``, or ``Scalar``/``ScalarList``/``""`` for non-tensors). Rules read sizes
and precisions from these; a trace recorded without shapes simply gives no tensors.
"""

from __future__ import annotations

import math

import msgspec

from attnprof.analysis.index.op_index import OpIndex

__all__ = ["ELEMENT_BYTES", "HALF_TYPES", "TensorArg", "tensor_args"]

#: Bytes per element of the scalar types torch.profiler writes in ``Input type``.
ELEMENT_BYTES: dict[str, int] = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4,
    "short int": 2, "signed char": 1, "unsigned char": 1, "bool": 1,
    "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1, "c10::complex<float>": 8,
    "c10::complex<double>": 16,
}  # fmt: skip
#: 16-bit floating types: inputs that should run on tensor cores, not upcast.
HALF_TYPES = frozenset({"c10::Half", "c10::BFloat16"})


class TensorArg(msgspec.Struct, frozen=True):
    """One tensor argument of an op (rank >= 1)."""

    dims: tuple[int, ...]
    dtype: str  # the trace's type name, e.g. "float", "c10::BFloat16"

    @property
    def numel(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int | None:
        """Size in bytes, when the element type is known."""
        size = ELEMENT_BYTES.get(self.dtype)
        return None if size is None else size * self.numel


def tensor_args(ops: OpIndex, i: int) -> list[TensorArg]:
    """The rank >= 1 tensor arguments of op ``i``, in argument order (empty when unrecorded)."""
    t = ops.trace.events
    row = ops.row[i]
    key = (int(t.input_dims[row]), int(t.input_types[row]))
    # Ops repeat the same few shapes thousands of times: read each pair of texts once.
    known = ops.cache.setdefault("tensor_args", {})
    if key not in known:
        known[key] = _read(ops.parsed_json(key[0]), ops.parsed_json(key[1]))
    return list(known[key])


def _read(dims: list[object] | None, types: list[object] | None) -> tuple[TensorArg, ...]:
    if not dims or not types:
        return ()
    out = []
    for d, ty in zip(dims, types, strict=False):  # a foreign trace's lists may differ
        if isinstance(d, list) and d and all(type(x) is int for x in d) and isinstance(ty, str):
            out.append(TensorArg(tuple(d), ty))
    return tuple(out)
