"""One step of each phase, as a callable: prefill, decode, train.

* ``prefill``: the whole prompt, one forward under ``no_grad``.
* ``decode``: one new token against the model's own KV cache (``past_key_values``, the
  cache object transformers builds) holding ``cache_len`` tokens; after each step the cache
  is cropped back, so every step sees the same length. An encoder-decoder's encoder runs
  once, before: decode steps reuse its output (and their cross-attention cache).
* ``train``: forward and backward of a loss (the mean of the model's first floating-point
  output: logits or last hidden state), gradients dropped after each step so every step
  allocates them afresh. The model stays in eval mode, so dropout does not make steps
  differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attnprof.errors import UsageError
from attnprof.models.loaded import LoadedModel, first_tensor

__all__ = ["PhaseStep", "build_step", "cache_bytes", "unsupported_phase"]


@dataclass
class PhaseStep:
    """A phase's step, the tokens it processes, and its cache (decode)."""

    call: Callable[[], object]
    tokens: int
    cache: Any = None
    #: Decode: ``growth(n)`` builds a cache of its own, grows it by ``n`` tokens and
    #: returns the bytes each kind of cache (``self``, ``cross``) held before and after.
    growth: Callable[[int], dict[str, tuple[int, int]]] | None = None
    #: Whether a call frees what earlier calls allocated (decode replaces the cache's
    #: tensors as they grow): memory is then measured on a call after a settling one.
    settles: bool = False


def unsupported_phase(loaded: LoadedModel, phase: str) -> str | None:
    """Why ``phase`` cannot run on this model, or ``None`` when it can."""
    if phase != "decode":
        return None
    if loaded.family == "encoder":
        return "an encoder-only model has no KV cache to decode against"
    if loaded.family == "module" or loaded.token_inputs is None:
        return ("decode needs a transformers decoder with a KV cache (past_key_values); "
                "this model is a plain nn.Module")
    return None


def build_step(loaded: LoadedModel, phase: str, *, cache_len: int) -> PhaseStep:
    """The step of ``phase`` for ``loaded`` (see the module doc)."""
    import torch

    model = loaded.model
    if phase == "prefill":
        def prefill() -> object:
            with torch.no_grad():
                return model(*loaded.args, **loaded.kwargs)

        return PhaseStep(call=prefill, tokens=loaded.tokens_per_step())
    if phase == "train":
        # A training forward builds no KV cache; transformers decoders build one unless
        # told (their config's use_cache is on), which timed a kv_cache part in training.
        kwargs = {**loaded.kwargs, **_no_cache(model)}

        def train() -> object:
            with torch.enable_grad():
                out = first_tensor(model(*loaded.args, **kwargs))
                if out is None or not out.requires_grad:
                    raise UsageError("train: the model's output has no floating-point "
                                     "tensor that needs a gradient; nothing to backward")
                out.float().mean().backward()
            for p in model.parameters():
                p.grad = None
            return None

        return PhaseStep(call=train, tokens=loaded.tokens_per_step())
    if phase == "decode":
        return _decode_step(loaded, cache_len)
    raise UsageError(f"unknown phase {phase!r}")


def _no_cache(model: Any) -> dict[str, bool]:
    """``{"use_cache": False}`` for a model whose forward takes ``use_cache`` (transformers
    models), else nothing (a plain nn.Module has no cache to turn off)."""
    import inspect

    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # a forward inspect cannot read: leave it as it is
        return {}
    return {"use_cache": False} if "use_cache" in params else {}


def _decode_step(loaded: LoadedModel, cache_len: int) -> PhaseStep:
    import torch

    assert loaded.token_inputs is not None
    model: Any = loaded.model  # a transformers model (token_inputs is set only for them)
    prompt = loaded.token_inputs(cache_len)["input_ids"]
    token = loaded.token_inputs(1)["input_ids"]
    extra: dict[str, Any] = {}
    feed = "input_ids"
    if loaded.family == "encoder-decoder":
        with torch.no_grad():
            encoded = model.get_encoder()(input_ids=loaded.kwargs["input_ids"])
        extra["encoder_outputs"] = (encoded[0],)
        feed = "decoder_input_ids"

    def fresh_cache() -> Any:
        """The cache after a prompt of ``cache_len`` tokens."""
        with torch.no_grad():
            out = model(**{feed: prompt}, use_cache=True, **extra)
        cache = getattr(out, "past_key_values", None)
        if cache is None:
            raise UsageError(f"{type(model).__name__} returned no past_key_values with "
                             "use_cache=True; it cannot decode against a cache")
        return cache

    def grow(cache: Any) -> object:
        with torch.no_grad():
            return model(**{feed: token}, past_key_values=cache, use_cache=True, **extra)

    cache = fresh_cache()
    # A sliding-window layer keeps only its last window − 1 tokens, and once full it can
    # be cropped back only if it records the past: it then keeps a step's token until the
    # crop, which restores the window (the step attends the same keys either way).
    if hasattr(cache, "activate_past_recording"):
        cache.activate_past_recording()

    def step() -> object:
        out = grow(cache)
        extra_tokens = cache.get_seq_length() - cache_len
        if extra_tokens > 0:
            # A negative length removes that many tokens in every transformers version.
            cache.crop(-extra_tokens)
        return out

    def growth(n: int) -> dict[str, tuple[int, int]]:
        # A cache of its own, as generation grows one: a sliding-window layer stays at
        # its window while a full-attention one grows.
        grown = fresh_cache()
        kinds = ("self", "cross") if loaded.family == "encoder-decoder" else ("self",)
        before = {kind: cache_bytes(grown, kind) for kind in kinds}
        for _ in range(n):
            grow(grown)
        return {kind: (before[kind], cache_bytes(grown, kind)) for kind in kinds}

    return PhaseStep(call=step, tokens=int(token.shape[0]), cache=cache, growth=growth,
                     settles=True)


def cache_bytes(cache: Any, kind: str = "self") -> int:
    """Bytes held by a transformers cache's key and value tensors: the self-attention
    cache's (``kind="self"``), or an encoder-decoder's cross-attention cache's
    (``kind="cross"``: the encoder output's keys and values, 0 for a decoder-only cache)."""
    import torch

    seen: set[int] = set()

    def walk(obj: Any, depth: int) -> int:
        if depth > 4 or obj is None:
            return 0
        if isinstance(obj, torch.Tensor):
            if id(obj) in seen:
                return 0
            seen.add(id(obj))
            return obj.numel() * obj.element_size()
        if isinstance(obj, (list, tuple)):
            return sum(walk(o, depth + 1) for o in obj)
        total = 0
        for name in ("layers", "keys", "values", "key_cache", "value_cache"):
            if hasattr(obj, name):
                total += walk(getattr(obj, name), depth + 1)
        return total

    if hasattr(cache, "self_attention_cache"):
        part = cache.self_attention_cache if kind == "self" else cache.cross_attention_cache
        return walk(part, 1)
    return walk(cache, 0) if kind == "self" else 0
