"""What ``attnprof model`` is asked to profile: which model, at which size, how.

A :class:`ModelSpec` is plain data (no torch, no transformers import). ``source`` is a
built-in name (:data:`BUILTIN_MODELS`), a factory (``path/to/file.py:factory`` or
``package.module:factory``) or ``None`` with ``model_path`` (a local folder holding a
transformers ``config.json``). :meth:`ModelSpec.validate` turns every impossible value into
a :class:`UsageError` naming the flag and the fix, before anything is built.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from attnprof.errors import UsageError
from attnprof.workload.problem import canonical_dtype

__all__ = ["BUILTIN_MODELS", "IMPLEMENTATIONS", "PHASES", "SDPA_PINS", "ModelSpec",
           "canonical_implementation"]

#: Built-in models: transformers architectures built from a config with random weights.
BUILTIN_MODELS: dict[str, str] = {
    "gpt2": "GPT-2 (decoder, fused QKV projection, learned positions)",
    "llama": "Llama (decoder, rotary positions, grouped K/V heads)",
    "bert": "BERT (encoder, separate Q/K/V projections)",
    "vit": "ViT (encoder over image patches)",
}
#: What each phase measures per step.
PHASES: dict[str, str] = {
    "prefill": "the whole prompt, one forward",
    "decode": "one new token against a KV cache of --cache-len tokens",
    "train": "forward and backward on a loss",
}
#: SDPA with one backend pinned: name -> torch.nn.attention.SDPBackend member.
SDPA_PINS: dict[str, str] = {
    "sdpa-math": "MATH", "sdpa-flash": "FLASH_ATTENTION",
    "sdpa-efficient": "EFFICIENT_ATTENTION", "sdpa-cudnn": "CUDNN_ATTENTION",
}
#: Every implementation name ``--attn`` takes.
IMPLEMENTATIONS: tuple[str, ...] = ("eager", "sdpa", "flex_attention", *SDPA_PINS)
_ALIASES = {"flex": "flex_attention", "sdpa_math": "sdpa-math", "math": "sdpa-math"}


def canonical_implementation(name: str) -> str:
    """``flex`` -> ``flex_attention``; :class:`UsageError` for a name attnprof cannot run."""
    key = _ALIASES.get(name.strip(), name.strip())
    if key not in IMPLEMENTATIONS:
        raise UsageError(f"--attn {name!r} is not an attention implementation; use one or "
                         f"more of {', '.join(IMPLEMENTATIONS)}")
    return key


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A model to profile and how; ``None`` sizes take the built-in's default."""

    source: str | None = None
    model_path: str | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None
    seq: int | None = None
    batch: int = 1
    dtype: str = "float32"
    device: str = "cpu"
    #: A regular expression over module paths and class names: modules to take as attention.
    attention_module: str | None = None
    #: Implementations to run (``()``: the model's own); the first is the reference.
    implementations: tuple[str, ...] = ()
    phases: tuple[str, ...] = ("prefill",)
    cache_len: int | None = None
    new_tokens: int = 8

    def replace(self, **changes: Any) -> ModelSpec:
        """A copy with ``changes`` applied."""
        return msgspec.structs.replace(self, **changes)

    @property
    def kind(self) -> str:
        """``builtin``, ``path`` (a config folder) or ``factory``."""
        if self.model_path is not None:
            return "path"
        return "builtin" if self.source in BUILTIN_MODELS else "factory"

    def validate(self) -> ModelSpec:
        """Raise :class:`UsageError` for the first impossible value; return the spec with
        names made canonical."""
        if self.model_path is not None and self.source is not None:
            raise UsageError(f"give either a model ({self.source!r}) or --model-path "
                             f"{self.model_path!r}, not both")
        if self.model_path is None:
            if not self.source:
                raise UsageError("name a model: one of " + ", ".join(BUILTIN_MODELS)
                                 + ", path/to/file.py:factory, or --model-path DIR")
            if self.source not in BUILTIN_MODELS and ":" not in self.source:
                raise UsageError(f"unknown model {self.source!r}; use one of "
                                 f"{', '.join(BUILTIN_MODELS)}, path/to/file.py:factory, "
                                 "package.module:factory, or --model-path DIR")
        for flag, value in (("--layers", self.layers), ("--hidden", self.hidden),
                            ("--heads", self.heads), ("--kv-heads", self.kv_heads),
                            ("--vocab", self.vocab), ("--seq", self.seq),
                            ("--batch", self.batch), ("--cache-len", self.cache_len),
                            ("--new-tokens", self.new_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise UsageError(f"{flag} must be a positive integer, got {value!r}")
        if self.heads and self.kv_heads and self.heads % self.kv_heads:
            raise UsageError(f"--kv-heads {self.kv_heads} must divide --heads {self.heads} "
                             "(1 = MQA, a divisor = GQA, equal = MHA)")
        if self.hidden and self.heads and self.hidden % self.heads:
            raise UsageError(f"--hidden {self.hidden} must be a multiple of --heads "
                             f"{self.heads}; e.g. --hidden {self.heads * 64}")
        if self.attention_module is not None:
            try:
                re.compile(self.attention_module)
            except re.error as exc:
                raise UsageError(f"--attention-module {self.attention_module!r} is not a "
                                 f"regular expression ({exc})") from None
        for phase in self.phases:
            if phase not in PHASES:
                raise UsageError(f"--phase {phase!r} is not a phase; use one or more of "
                                 f"{', '.join(PHASES)}")
        if not self.phases:
            raise UsageError("--phase names no phase; use one or more of "
                             + ", ".join(PHASES))
        impls = tuple(dict.fromkeys(canonical_implementation(i) for i in self.implementations))
        phases = tuple(dict.fromkeys(self.phases))
        return self.replace(dtype=canonical_dtype(self.dtype), implementations=impls,
                            phases=phases)

    def describe(self) -> str:
        """One line: what the model is and its size (for titles)."""
        name = self.source or f"--model-path {self.model_path}"
        sizes = [f"{k}={v}" for k, v in (("layers", self.layers), ("hidden", self.hidden),
                                         ("heads", self.heads), ("kv_heads", self.kv_heads))
                 if v is not None]
        return " ".join([name, *sizes])
