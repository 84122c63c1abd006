"""The built-in models: transformers architectures built from a config, random weights.

Each is sized by the flags (``--layers``, ``--hidden``, ``--heads``, ``--kv-heads``,
``--vocab``, ``--seq``); a flag left out takes the width of the public model the name
stands for (GPT-2 small, a Llama with 4 query heads per K/V head, BERT base, ViT base) with
4 layers, so a CPU run stays short. Nothing is downloaded: the config is written here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from attnprof.workload.model_spec import ModelSpec

__all__ = ["DEFAULTS", "POSITIONS", "builtin_config", "builtin_model_class"]

#: Default sizes per built-in (layers, hidden, heads, kv_heads, vocab, seq).
DEFAULTS: dict[str, dict[str, int]] = {
    "gpt2": {"layers": 4, "hidden": 768, "heads": 12, "kv_heads": 12, "vocab": 50257,
             "seq": 512},
    "llama": {"layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4, "vocab": 32000,
              "seq": 512},
    "bert": {"layers": 4, "hidden": 768, "heads": 12, "kv_heads": 12, "vocab": 30522,
             "seq": 512},
    "vit": {"layers": 4, "hidden": 768, "heads": 12, "kv_heads": 12, "vocab": 0, "seq": 196},
}
#: Positions of the public model each built-in stands for, which its config states and a
#: run is held to: GPT-2's and BERT's learned tables (1,024 and 512 rows), Llama 3.1's
#: rotary context. ViT's positions follow the image, so --seq sizes the image instead.
POSITIONS: dict[str, int] = {"gpt2": 1024, "llama": 131072, "bert": 512}
_PATCH = 16


def sizes_of(spec: ModelSpec) -> dict[str, int]:
    """The built-in's sizes with the spec's flags applied (kv_heads follows heads for
    models without grouped heads, and defaults to a quarter of them for llama)."""
    assert spec.source is not None
    base = dict(DEFAULTS[spec.source])
    for key in ("layers", "hidden", "heads", "vocab", "seq"):
        value = getattr(spec, key)
        if value is not None:
            base[key] = value
    if spec.source == "llama":
        if spec.kv_heads is not None:
            base["kv_heads"] = spec.kv_heads
        elif spec.heads is not None:
            base["kv_heads"] = spec.heads // 4 if spec.heads % 4 == 0 else spec.heads
    else:
        base["kv_heads"] = base["heads"]
    if spec.hidden is None and base["hidden"] % base["heads"]:
        # Keep the head dimension of the default model when only --heads changed.
        head_dim = DEFAULTS[spec.source]["hidden"] // DEFAULTS[spec.source]["heads"]
        base["hidden"] = head_dim * base["heads"]
    return base


def builtin_config(spec: ModelSpec, transformers: Any) -> Any:
    """The transformers config of a built-in at the spec's sizes (and the public model's
    positions, :data:`POSITIONS`)."""
    s = sizes_of(spec)
    name = spec.source
    positions = POSITIONS.get(name or "", 0)
    if name == "gpt2":
        return transformers.GPT2Config(n_layer=s["layers"], n_embd=s["hidden"],
                                       n_head=s["heads"], vocab_size=s["vocab"],
                                       n_positions=positions)
    if name == "llama":
        # Llama's MLP width: 8/3 of hidden, rounded up to a multiple of 256.
        inter = 256 * math.ceil(8 * s["hidden"] / 3 / 256)
        return transformers.LlamaConfig(
            hidden_size=s["hidden"], intermediate_size=inter, num_hidden_layers=s["layers"],
            num_attention_heads=s["heads"], num_key_value_heads=s["kv_heads"],
            vocab_size=s["vocab"], max_position_embeddings=positions)
    if name == "bert":
        return transformers.BertConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                       num_attention_heads=s["heads"],
                                       intermediate_size=4 * s["hidden"],
                                       vocab_size=s["vocab"],
                                       max_position_embeddings=positions)
    assert name == "vit"
    side = max(1, round(math.sqrt(s["seq"])))
    return transformers.ViTConfig(hidden_size=s["hidden"], num_hidden_layers=s["layers"],
                                  num_attention_heads=s["heads"],
                                  intermediate_size=4 * s["hidden"], image_size=_PATCH * side,
                                  patch_size=_PATCH)


def builtin_model_class(name: str, transformers: Any) -> Callable[..., Any]:
    """The model class each built-in is built as (LM heads for the decoders)."""
    return {"gpt2": transformers.GPT2LMHeadModel, "llama": transformers.LlamaForCausalLM,
            "bert": transformers.BertModel, "vit": transformers.ViTModel}[name]
