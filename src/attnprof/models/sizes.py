"""The sizes a model's config states, read once and checked before anything is built.

A config.json is the user's file: a ``num_attention_heads`` of 0 or −8, a ``hidden_size``
of 2**40, a layer count of a billion. transformers meets them with a ZeroDivisionError, a
negative tensor dimension, a storage overflow, or an hour of building modules; attnprof
meets them here, with one line naming the key, its value and the fix
(:func:`check_config_sizes`), and :mod:`attnprof.models.fits` then checks that what the
sizes describe fits in memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attnprof.errors import UsageError

__all__ = ["SIZE_KEYS", "check_config_sizes", "config_sizes"]

#: Config keys that are counts or widths across the architectures transformers builds:
#: each, when given, must be a positive integer.
SIZE_KEYS: tuple[str, ...] = (
    # layers
    "num_hidden_layers", "n_layer", "num_layers", "n_layers", "num_decoder_layers",
    "encoder_layers", "decoder_layers",
    # widths
    "hidden_size", "n_embd", "d_model", "dim", "intermediate_size", "n_inner", "d_ff",
    "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "hidden_dim", "head_dim", "d_kv",
    # heads
    "num_attention_heads", "n_head", "num_heads", "n_heads", "num_key_value_heads",
    "encoder_attention_heads", "decoder_attention_heads", "multi_query_group_num",
    # tables and inputs
    "vocab_size", "max_position_embeddings", "n_positions", "max_source_positions",
    "max_target_positions", "image_size", "patch_size", "num_channels", "sliding_window",
)
#: Sub-configs of composite models (a vision tower beside a text model ...), checked too.
_NESTED = ("text_config", "vision_config", "audio_config", "encoder", "decoder")


def _get(config: Any, key: str) -> Any:
    if isinstance(config, Mapping):
        return config.get(key)
    return getattr(config, key, None)


def check_config_sizes(config: Any, where: str) -> None:
    """:class:`UsageError` naming the first size key of ``config`` (a transformers config,
    or the dict read from config.json) that is not a positive integer, or whose heads do
    not divide its width; ``where`` says whose config it is (``--model-path DIR``)."""
    for key in SIZE_KEYS:
        value = _get(config, key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{where}: config.json's {key} is {value!r}; it must be a "
                             "positive integer (fix it in config.json)")
    sizes = config_sizes(config)
    heads, kv, hidden = sizes["heads"], sizes["kv_heads"], sizes["hidden"]
    if heads and kv and heads % kv:
        raise UsageError(f"{where}: config.json's {kv} key/value heads do not divide its "
                         f"{heads} attention heads; give a divisor (1 = MQA, equal = MHA)")
    stated_head_dim = _first(config, "head_dim", "d_kv")
    if heads and hidden and stated_head_dim is None and hidden % heads:
        raise UsageError(f"{where}: config.json's hidden size {hidden} is not a multiple of "
                         f"its {heads} attention heads (and it gives no head_dim); make it "
                         f"a multiple, e.g. {heads * max(1, round(hidden / heads))}")
    for name in _NESTED:
        nested = _get(config, name)
        if isinstance(nested, Mapping) or hasattr(nested, "to_dict"):
            check_config_sizes(nested, f"{where} ({name})")


def _first(config: Any, *names: str) -> int | None:
    for n in names:
        value = _get(config, n)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def config_sizes(config: Any) -> dict[str, int | None]:
    """Layers, hidden, heads, kv_heads, head_dim as a transformers config states them, and
    what depends on the rest: an encoder-decoder's decoder_layers and decoder_heads (when
    they differ from the encoder's), intermediate and vocab."""
    heads = _first(config, "num_attention_heads", "n_head", "num_heads", "n_heads",
                   "encoder_attention_heads")
    hidden = _first(config, "hidden_size", "n_embd", "d_model", "dim")
    kv_heads = _first(config, "num_key_value_heads", "multi_query_group_num") or heads
    head_dim = _first(config, "head_dim", "d_kv") or (hidden // heads if hidden and heads
                                                       else None)
    layers = _first(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers",
                    "encoder_layers")
    two_stacks = bool(_get(config, "is_encoder_decoder"))
    decoder = _first(config, "num_decoder_layers", "decoder_layers") if two_stacks else None
    decoder_heads = _first(config, "decoder_attention_heads") if two_stacks else None
    return {"layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv_heads,
            "head_dim": head_dim, "decoder_layers": decoder, "decoder_heads": decoder_heads,
            "intermediate": _first(config, "intermediate_size", "n_inner", "d_ff", "ffn_dim",
                                   "encoder_ffn_dim", "hidden_dim"),
            "vocab": _first(config, "vocab_size")}
