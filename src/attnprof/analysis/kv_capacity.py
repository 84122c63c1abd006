"""The KV cache a decode keeps per token, and the largest context that fits a target's
memory: a model from the shapes, never a measurement.

One token adds ``2 (K and V) × layers × kv_heads × head_dim × dtype bytes`` to each
sequence's cache. On a target with ``memory`` bytes, after what else is held (a model's
weights), a batch of ``batch`` sequences fits

    largest context = (memory − weights) // (batch × bytes per token)

tokens per sequence. It counts the cache and the weights only: activations, workspaces,
the allocator's slack and the runtime's own memory come on top, so a real run fits less
(the figure is an upper bound on the context); a sliding-window layer holds at most its
window, so a model with such layers fits more than its full-attention count says (the
record's own computed cache, when it has one, says so). Pure: figures in, figures out.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnprof.workload.problem import DTYPE_BYTES, Workload

__all__ = ["KV_ASSUMPTIONS", "KvFit", "KvShape", "kv_bytes_per_token", "kv_fit",
           "kv_shape_of_model", "kv_shape_of_workload"]

#: What every figure of the KV table assumes, printed under it.
KV_ASSUMPTIONS = ("KV cache: a model, not a measurement — per token 2 (K, V) × layers × "
                  "kv_heads × head_dim × dtype bytes; largest context = (memory − weights) "
                  "// (batch × bytes per token), counting the cache and the weights only "
                  "(activations, workspaces and the runtime come on top: a real run fits "
                  "less)")


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, element_bytes: int) -> int:
    """Bytes one token adds to one sequence's K and V cache over ``layers`` layers."""
    return 2 * layers * kv_heads * head_dim * element_bytes


@dataclass(frozen=True)
class KvShape:
    """What sets a cache's size: the heads' shape, the layers, the batch, and what else the
    target must hold (``reserved_bytes``: a model's weights)."""

    layers: int
    kv_heads: int
    head_dim: int
    element_bytes: int
    batch: int
    reserved_bytes: int = 0
    #: Where the shape came from, as the output says it.
    basis: str = ""

    @property
    def bytes_per_token(self) -> int:
        """Per sequence, every layer."""
        return kv_bytes_per_token(self.layers, self.kv_heads, self.head_dim,
                                  self.element_bytes)


def kv_shape_of_workload(workload: Workload) -> KvShape:
    """One attention layer as a comparison measured it: its batch, KV heads, head dim
    and dtype; nothing else held (a model of L such layers holds L times the cache)."""
    return KvShape(layers=1, kv_heads=workload.num_kv_heads, head_dim=workload.head_dim,
                   element_bytes=workload.element_bytes, batch=workload.batch,
                   basis="one attention layer (the comparison's workload); a model of L "
                         "layers holds L times this")


def kv_shape_of_model(layers: int | None, kv_heads: int | None, head_dim: int | None,
                      dtype: str, batch: int | None, parameters: int) -> KvShape | None:
    """A model's cache from its config, its weights (parameters × dtype bytes) held
    beside it; ``None`` when the config does not give the layers, KV heads or head dim."""
    element = DTYPE_BYTES.get(dtype)
    if not (layers and kv_heads and head_dim and element):
        return None
    return KvShape(layers=layers, kv_heads=kv_heads, head_dim=head_dim,
                   element_bytes=element, batch=batch or 1,
                   reserved_bytes=parameters * element,
                   basis=f"the model's config: {layers} layers, {kv_heads} KV heads, "
                         f"head_dim {head_dim}, {dtype}; weights {parameters:,} parameters "
                         f"× {element} bytes")


@dataclass(frozen=True)
class KvFit:
    """A cache on one target: its bytes per token and the largest context that fits
    (``None``: ``why_none`` says why)."""

    target: str
    memory_bytes: int | None
    bytes_per_token: int
    batch: int
    reserved_bytes: int
    largest_context: int | None
    why_none: str = ""


def kv_fit(shape: KvShape, target: str, memory_bytes: int | None) -> KvFit:
    """``shape``'s cache on a target of ``memory_bytes`` (``None``: not known)."""
    per_token = shape.bytes_per_token
    if memory_bytes is None:
        return KvFit(target, None, per_token, shape.batch, shape.reserved_bytes, None,
                     "no memory figure for the target")
    free = memory_bytes - shape.reserved_bytes
    if free < shape.batch * per_token:
        return KvFit(target, memory_bytes, per_token, shape.batch, shape.reserved_bytes,
                     None, "the weights leave no room for one token per sequence")
    return KvFit(target, memory_bytes, per_token, shape.batch, shape.reserved_bytes,
                 free // (shape.batch * per_token))
