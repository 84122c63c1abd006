"""What each attention module computed in one step, read from its calls: query and key
lengths, self or cross, causal, the sliding window its config gives it, and the (query,
key) pairs its mask admitted.

A config may declare a sliding window (Mistral's ``sliding_window``; ``layer_types``
naming the sliding layers, as Qwen2 and Gemma do) and transformers builds the mask from
it; nothing in a timing says whether it did. :func:`probe_calls` runs the step once with a
forward pre-hook on every attention module and counts what each call's mask admits (a
boolean mask, a float one with the dtype's minimum where masked, or flex_attention's
``BlockMask``), so the record can say per layer that the window was applied and what it
saved, and FLOPs count the pairs the mask admits.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from attnprof.models.locate import Located

if TYPE_CHECKING:
    import torch

__all__ = ["CallSeen", "declared_window", "probe_calls"]

_KV_NAMES = ("key_value_states", "encoder_hidden_states")
#: The largest flex_attention mask made dense to be read (pairs; 64 MiB as booleans).
_DENSE_LIMIT = 1 << 26
_MASK_NAMES = ("attention_mask", "mask", "attn_mask", "block_mask")


@dataclass(frozen=True)
class CallSeen:
    """One call of an attention module, as its arguments showed it."""

    path: str
    layer: str | None
    q_len: int
    k_len: int
    cross: bool
    #: ``None``: the call does not say (a hand-written module passing ``is_causal`` to SDPA
    #: inside its forward), so its pairs, and FLOPs, are not counted.
    causal: bool | None
    window: int | None
    #: Pairs the mask admitted (batch element 0, head 0) and the most keys one query
    #: admitted; ``None`` when no mask was passed (all causal pairs, or all pairs).
    admitted: int | None
    widest: int | None
    #: Query heads and head dimension, as the module states them (``None``: it does not).
    heads: int | None = None
    head_dim: int | None = None


def declared_window(module: Any, layer_index: int | None) -> int | None:
    """The sliding window the module's config (or the module itself) gives it."""
    own = getattr(module, "sliding_window", "absent")
    if own != "absent":
        return own if isinstance(own, int) and not isinstance(own, bool) else None
    config = getattr(module, "config", None)
    window = getattr(config, "sliding_window", None)
    if not isinstance(window, int) or isinstance(window, bool):
        return None
    if getattr(config, "use_sliding_window", True) is False:
        return None
    kinds = getattr(config, "layer_types", None)
    if isinstance(kinds, (list, tuple)) and layer_index is not None \
            and 0 <= layer_index < len(kinds):
        return window if kinds[layer_index] == "sliding_attention" else None
    return window


def probe_calls(step: Callable[[], object], located: Located) -> list[CallSeen]:
    """Call ``step`` once, hooked, and return every attention call it made, in order."""
    seen: list[CallSeen] = []
    handles = []
    layer_of = {f.path: f.layer for f in located.attention}
    for path, layer in layer_of.items():
        module = located.modules.get(path)
        if module is None:
            continue
        index = _index(layer)
        window = _window_inside(module, index)

        def hook(mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 path: str = path, layer: str | None = layer,
                 window: int | None = window) -> None:
            call = _read_call(mod, args, kwargs, path, layer, window)
            if call is not None:
                seen.append(call)

        handles.append(module.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        step()
    finally:
        for h in handles:
            h.remove()
    return seen


def _index(layer: str | None) -> int | None:
    last = (layer or "").rpartition(".")[2]
    return int(last) if last.isdigit() else None


def _window_inside(module: Any, index: int | None) -> int | None:
    """The window of the module or of the first descendant that declares one (BERT-like
    modules hold the config in a child)."""
    for sub in module.modules():
        if hasattr(sub, "sliding_window") or hasattr(sub, "config"):
            return declared_window(sub, index)
    return None


def _read_call(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], path: str,
               layer: str | None, window: int | None) -> CallSeen | None:
    import torch

    try:
        named = inspect.signature(module.forward).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        named = dict(kwargs)
    for key, value in list(named.items()):
        if isinstance(value, dict) and key not in _MASK_NAMES:
            named.update(value)  # **kwargs
    hidden = next((a for a in [*args, *named.values()] if isinstance(a, torch.Tensor)
                   and a.dim() >= 3 and a.is_floating_point()), None)
    if hidden is None:
        return None
    kv = next((named[n] for n in _KV_NAMES if isinstance(named.get(n), torch.Tensor)), None)
    mask = next((named[n] for n in _MASK_NAMES if named.get(n) is not None), None)
    q_len = int(hidden.shape[-2])
    k_len = int(kv.shape[-2]) if kv is not None else q_len + _cached(module, named)
    admitted = widest = None
    dense = _dense(mask)
    if dense is not None:
        # The mask spans the keys the call sees (a full sliding window's cache holds only
        # window − 1 of them); the lengths above are the sequence's.
        rows = dense.sum(-1)
        admitted, widest = int(rows.sum()), int(rows.max()) if rows.numel() else 0
    causal = False if kv is not None else _causal(module, named)
    heads = _stated(module, _HEAD_NAMES)
    head_dim = _stated(module, _HEAD_DIM_NAMES) or (
        int(hidden.shape[-1]) // heads if heads and hidden.shape[-1] % heads == 0 else None)
    return CallSeen(path=path, layer=layer, q_len=q_len, k_len=k_len, cross=kv is not None,
                    causal=causal, window=None if kv is not None else window,
                    admitted=admitted, widest=widest, heads=heads, head_dim=head_dim)


def _causal(module: Any, named: dict[str, Any]) -> bool | None:
    """Whether a self-attention call is causal: transformers modules say so in
    ``is_causal``; a forward taking ``is_causal`` (``nn.MultiheadAttention``) in that
    argument or its default; otherwise the call does not say."""
    stated = getattr(module, "is_causal", None)
    if isinstance(stated, bool):
        return stated
    try:
        parameter = inspect.signature(module.forward).parameters.get("is_causal")
    except (TypeError, ValueError):
        parameter = None
    if parameter is not None:
        value = named.get("is_causal", parameter.default)
        return value if isinstance(value, bool) else None
    return None


_HEAD_NAMES = ("num_heads", "n_heads", "num_attention_heads", "n_head", "heads")
_HEAD_DIM_NAMES = ("head_dim", "attention_head_size", "key_value_proj_dim")


def _stated(module: Any, names: tuple[str, ...]) -> int | None:
    """The first of ``names`` the module (or a module inside it, or its config) sets to a
    positive integer."""
    for sub in module.modules():
        for holder in (sub, getattr(sub, "config", None)):
            for n in names:
                value = getattr(holder, n, None)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return None


def _cached(module: Any, named: dict[str, Any]) -> int:
    """Tokens the KV cache holds for this module's layer before the call (decode)."""
    past = named.get("past_key_values", named.get("past_key_value"))
    index = getattr(module, "layer_idx", None)
    if past is None or not isinstance(index, int):
        return 0
    past = getattr(past, "self_attention_cache", past)
    try:
        return int(past.get_seq_length(index))
    except Exception:  # a cache of another shape: lengths read from the call alone
        return 0


def _dense(mask: Any) -> torch.Tensor | None:
    """A mask as a boolean [queries, keys] matrix (batch element 0, head 0), or ``None``."""
    import torch

    if isinstance(mask, torch.Tensor) and mask.dim() >= 2:
        m = mask.reshape(-1, *mask.shape[-2:])[0]
        if m.dtype == torch.bool:
            return m
        if m.is_floating_point():
            # Additive masks hold the dtype's minimum (or -inf) where a pair is masked.
            return m > torch.finfo(m.dtype).min / 2
        return m != 0
    mask_mod = getattr(mask, "mask_mod", None)
    lengths = getattr(mask, "seq_lengths", None)
    if mask_mod is not None and lengths is not None:  # flex_attention's BlockMask
        from torch.nn.attention.flex_attention import create_mask

        q, k = (int(n) for n in lengths)
        if q * k > _DENSE_LIMIT:  # block-sparse so that it never is dense: not read
            return None
        device = getattr(getattr(mask, "kv_num_blocks", None), "device", "cpu")
        return create_mask(mask_mod, 1, 1, q, k, device=device)[0, 0].bool()
    return None
