"""A workload's attention sizes from a transformers ``config.json`` (``--from-config DIR``).

Read as plain JSON through :mod:`attnprof.input_files` (no transformers import, nothing
downloaded): query heads, K/V heads, head dim, sliding window and maximum positions, under
the names the common architectures use. A size the config does not state is left to the
flags or the defaults; flags given on the command line win over the config.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from attnprof.errors import UsageError
from attnprof.input_files import CONFIG, check_folder, read_input

__all__ = ["ConfigSizes", "read_config_sizes"]

_HEADS = ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads")
_KV_HEADS = ("num_key_value_heads", "num_kv_heads", "multi_query_group_num")
_HIDDEN = ("hidden_size", "n_embd", "d_model", "dim")
_POSITIONS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length")
_FIX = "give a folder holding a transformers config.json (save_pretrained writes one)"


@dataclass(frozen=True)
class ConfigSizes:
    """What a config says of its attention (``None``: not stated)."""

    heads: int
    kv_heads: int | None
    head_dim: int
    window: int | None
    max_positions: int | None

    def fields(self) -> dict[str, int]:
        """The workload fields it sets (``max_positions`` is a limit, not a field). A config
        that names no K/V heads is multi-head: as many K/V heads as heads."""
        found = {"heads": self.heads, "kv_heads": self.kv_heads or self.heads,
                 "head_dim": self.head_dim,
                 "window": self.window}
        return {k: v for k, v in found.items() if v is not None}


def read_config_sizes(folder: str) -> ConfigSizes:
    """The sizes of ``folder/config.json``; a missing file, bad JSON or a config without
    heads is one :class:`UsageError` line."""
    source = f"--from-config {folder!r}"
    check_folder(folder, source, _FIX)
    path = os.path.join(folder, "config.json")
    if not os.path.lexists(path):
        raise UsageError(f"{source} has no config.json; {_FIX}")
    try:
        raw = json.loads(read_input(path, f"the config.json of {source}", cap=CONFIG,
                                    fix=_FIX))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"the config.json of {source} is not JSON ({exc}); {_FIX}") from None
    if not isinstance(raw, dict):
        raise UsageError(f"the config.json of {source} is not a JSON object; {_FIX}")
    config = raw
    if isinstance(raw.get("text_config"), dict) and not _first(raw, _HEADS):
        config = raw["text_config"]  # a multimodal model: its language model's attention
    heads = _first(config, _HEADS)
    if heads is None:
        raise UsageError(f"the config.json of {source} states no attention heads (none of "
                         f"{', '.join(_HEADS)}); give --heads instead")
    head_dim = _first(config, ("head_dim",))
    if head_dim is None:
        hidden = _first(config, _HIDDEN)
        if hidden is None or hidden % heads:
            raise UsageError(f"the config.json of {source} states neither head_dim nor a "
                             f"hidden size that {heads} heads divide; give --head-dim")
        head_dim = hidden // heads
    window = _first(config, ("sliding_window", "attention_window"))
    return ConfigSizes(heads=heads, kv_heads=_first(config, _KV_HEADS), head_dim=head_dim,
                       window=window, max_positions=_first(config, _POSITIONS))


def _first(config: dict[str, Any], names: tuple[str, ...]) -> int | None:
    """The first of ``names`` the config sets to a positive integer."""
    for name in names:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
