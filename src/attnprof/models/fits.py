"""Whether a model can run as asked, decided before anything is built.

* Positions: a config that states a maximum (``max_position_embeddings``,
  ``n_positions``) is held to it — GPT-2's learned table has 1,024 rows, and a step past
  it would index beyond the table or silently profile a model that does not exist.
  Relative positions (T5's buckets) state none: any length runs, and the record says so.
* Memory: the weights and a step's largest transients, first from the sizes alone (so a
  billion layers is refused in microseconds instead of being built for hours), then
  exactly, counting parameters on the ``meta`` device (nothing allocated).
"""

from __future__ import annotations

from typing import Any

from attnprof.errors import UsageError
from attnprof.models.sizes import config_sizes
from attnprof.workload.model_spec import ModelSpec

__all__ = ["PY_BYTES_PER_LAYER", "check_fits", "longest_sequence", "position_limit"]

#: Host memory the Python objects of one transformer layer take (modules, parameters'
#: wrappers, hooks' tables), measured building Llama and GPT-2 layers on ``meta``
#: (29 to 32 KiB); the lower figure, so a model that fits is never refused for it.
PY_BYTES_PER_LAYER = 24 * 1024
_POSITION_KEYS = ("max_position_embeddings", "n_positions")


def position_limit(config: Any) -> tuple[int | None, str]:
    """The most positions the config allows (``None``: no limit) and where that is said."""
    for key in _POSITION_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value, f"{type(config).__name__}.{key}"
    if getattr(config, "relative_attention_num_buckets", None):
        return None, "relative position buckets: any length runs"
    return None, "the config states no maximum"


def longest_sequence(spec: ModelSpec, seq: int) -> int:
    """Positions a run reaches: the prompt in prefill and train; in decode the cache of
    ``--cache-len`` tokens (default ``--seq``) and the ``--new-tokens`` grown after it."""
    longest = seq
    if "decode" in spec.phases:
        longest = max(longest, (spec.cache_len or seq) + spec.new_tokens)
    return longest


def check_fits(cls: Any, config: Any, spec: ModelSpec, seq: int) -> None:
    """:class:`UsageError` when the model cannot hold the sequence, or when its weights and
    the largest transients of a step (logits; an eager score matrix) cannot fit in memory."""
    _check_positions(config, spec, seq)
    # From the sizes alone first: building a billion layers, even on meta, takes hours.
    _check_memory(_lower_bound_parameters(config), config, spec, seq)
    import torch

    build = getattr(cls, "from_config", None) or cls  # Auto classes build from_config
    with torch.device("meta"):
        params = sum(p.numel() for p in build(config).parameters())
    _check_memory(params, config, spec, seq)


def _check_positions(config: Any, spec: ModelSpec, seq: int) -> None:
    limit, said = position_limit(config)
    longest = longest_sequence(spec, seq)
    if limit is None or longest <= limit:
        return
    asked = (f"--seq {seq}" if longest == seq else
             f"--cache-len {spec.cache_len or seq} + --new-tokens {spec.new_tokens} in "
             f"decode ({longest} positions)")
    fix = ("lower --seq" if longest == seq else "lower --cache-len or --new-tokens")
    if spec.kind == "builtin":
        fix += (f"; the built-in {spec.source} keeps the public model's {limit} positions, "
                "so for longer ones profile a config.json that states more (--model-path)")
    raise UsageError(f"{asked} exceeds the model's {limit} positions ({said}); {fix}")


def _lower_bound_parameters(config: Any) -> int:
    """Parameters the sizes imply at the least: each layer's attention projections and a
    two-matrix MLP, and the token embedding (biases, norms and extra heads left out)."""
    s = config_sizes(config)
    hidden, heads, kv, head_dim = s["hidden"] or 0, s["heads"] or 0, s["kv_heads"] or 0, \
        s["head_dim"] or 0
    layers = (s["layers"] or 0) + (s["decoder_layers"] or 0)
    attention = hidden * head_dim * (2 * heads + 2 * kv)
    mlp = 2 * hidden * (s["intermediate"] or 0)
    return layers * (attention + mlp) + (s["vocab"] or 0) * hidden


def _check_memory(params: int, config: Any, spec: ModelSpec, seq: int) -> None:
    from attnprof.measure.device import memory_shortfall
    from attnprof.workload.problem import DTYPE_BYTES

    sizes = config_sizes(config)
    heads = sizes.get("heads") or 1
    vocab = sizes.get("vocab") or 0
    elem = DTYPE_BYTES.get(spec.dtype, 4)
    # Decode builds its cache with a prefill of --cache-len tokens: its logits count too.
    tokens = max(seq, spec.cache_len or 0) if "decode" in spec.phases else seq
    need = (params * elem * (3 if "train" in spec.phases else 1)
            + spec.batch * tokens * vocab * 4 + spec.batch * heads * tokens * tokens * 4)
    layers = (sizes["layers"] or 0) + (sizes["decoder_layers"] or 0)
    if "decode" in spec.phases:
        # The KV cache grown by --new-tokens after --cache-len (and the encoder's, cross).
        cached = (spec.cache_len or seq) + spec.new_tokens + seq
        need += (spec.batch * cached * 2 * (sizes["kv_heads"] or 0) * (sizes["head_dim"] or 0)
                 * elem * (sizes["decoder_layers"] or sizes["layers"] or 0))
    host = layers * PY_BYTES_PER_LAYER + (need if spec.device == "cpu" else 0)
    short = (memory_shortfall(need, spec.device) if spec.device != "cpu" else None) \
        or memory_shortfall(host, "cpu")
    if short is None:
        return
    if spec.kind == "builtin":
        fix = ("reduce --layers, --hidden, --vocab, --seq, --cache-len, --new-tokens or "
               "--batch")
    else:
        stated = ", ".join(f"{k} {v:,}" for k, v in sizes.items() if v)
        fix = (f"its config.json states {stated}: make them smaller, or lower --seq, "
               "--cache-len, --new-tokens or --batch")
    raise UsageError(f"{type(config).__name__} at this size needs about {short[0]} "
                     f"(weights, layers and one step's largest tensors) but {short[1]}; "
                     f"{fix}")
