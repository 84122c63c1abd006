"""A model ready to profile: the module, its inputs, and what it is.

Every source (built-in, config folder, factory) produces a :class:`LoadedModel`; the run
only reads it. Inputs are kept in one form, positional ``args`` and keyword ``kwargs``, so
``model(*args, **kwargs)`` is a prefill step whatever the user's factory returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnprof.errors import UsageError
from attnprof.record.model import ModelFamily

if TYPE_CHECKING:
    import torch

__all__ = ["LoadedModel", "as_call_inputs", "first_tensor", "input_sizes"]


@dataclass
class LoadedModel:
    """A built model and the inputs of one prefill step."""

    model: torch.nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    source: str
    family: ModelFamily
    weights: str  # random | loaded | factory
    #: Sizes read from the config (``None`` for a plain nn.Module): layers, hidden, heads,
    #: kv_heads, head_dim, seq, batch.
    sizes: dict[str, int | None] = field(default_factory=dict)
    #: For transformers models: build inputs of ``n`` new tokens for decode.
    token_inputs: Callable[[int], dict[str, Any]] | None = None
    dtype: str = "float32"
    device: str = "cpu"
    #: The first input tensor's shape, when it is not ``[batch, seq]`` or
    #: ``[batch, seq, features]`` (a factory's image batch, a 4-D tensor of heads).
    input_shape: list[int] | None = None

    @property
    def is_transformers(self) -> bool:
        """Whether the model is a transformers ``PreTrainedModel`` (it has a config)."""
        return hasattr(self.model, "config") and hasattr(self.model, "set_attn_implementation")

    def tokens_per_step(self) -> int:
        """Tokens one prefill step processes (batch × sequence), 0 when unknown."""
        batch, seq = self.sizes.get("batch"), self.sizes.get("seq")
        return int(batch * seq) if batch and seq else 0


def as_call_inputs(inputs: Any, source: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A factory's inputs — a tuple or list (positional), a dict (keywords) or one tensor —
    as ``(args, kwargs)``; :class:`UsageError` naming ``source`` for anything else."""
    import torch

    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, dict):
        if not all(isinstance(k, str) for k in inputs):
            raise UsageError(f"model factory {source!r}: the inputs dict must have string "
                             "keys (keyword arguments of forward)")
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    raise UsageError(f"model factory {source!r} returned inputs of type "
                     f"{type(inputs).__name__}; return a tensor, a tuple of positional "
                     "arguments or a dict of keyword arguments")


def input_sizes(args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> tuple[dict[str, int | None], list[int] | None]:
    """Batch and sequence read from the first input tensor, and its shape when it has no
    sequence axis attnprof can tell.

    ``[batch, seq]`` (token ids) and ``[batch, seq, features]`` (embeddings) have one;
    a 4-D tensor (an image batch ``[batch, channels, height, width]``, or
    ``[batch, heads, seq, head_dim]``) has none a reader can be sure of, so its tokens
    per step — and tokens/s — stay unknown instead of being read from its second axis."""
    import torch

    tensor = next((a for a in [*args, *kwargs.values()] if isinstance(a, torch.Tensor)), None)
    if tensor is None or tensor.dim() < 2:
        return {}, None
    shape = [int(n) for n in tensor.shape]
    if tensor.dim() <= 3:
        return {"batch": shape[0], "seq": shape[1]}, None
    return {"batch": shape[0]}, shape


def first_tensor(output: Any) -> torch.Tensor | None:
    """The first floating-point tensor in a model's output (logits, last hidden state):
    what accuracy is compared on and what the training loss is taken of."""
    import torch

    if isinstance(output, torch.Tensor):
        return output if output.is_floating_point() else None
    if isinstance(output, dict) or hasattr(output, "values"):
        items: Any = list(output.values())
    elif isinstance(output, (tuple, list)):
        items = output
    else:
        return None
    for item in items:
        found = first_tensor(item)
        if found is not None:
            return found
    return None
