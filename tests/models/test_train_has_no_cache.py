"""A training step builds no KV cache (issue 31, item 6): transformers decoders build one by
default (their config's use_cache), which put a kv_cache part into the training phase's
attribution; the train step passes use_cache=False."""

from __future__ import annotations

from model_helpers import FAST, TINY

from attnprof.run.model import profile_model
from attnprof.workload.model_spec import ModelSpec


def test_llama_training_has_no_kv_cache_part() -> None:
    spec = ModelSpec(source="llama", **{**TINY, "kv_heads": 2}, implementations=("sdpa",),
                     phases=("prefill", "train"))
    record = profile_model(spec=spec, settings=FAST)
    train, prefill = record.run("sdpa", "train"), record.run("sdpa", "prefill")
    assert train.status == "ok" and train.attribution is not None
    parts = {c.name for layer in train.attribution.layers for c in layer.components
             if c.cpu_us > 0}
    assert "core" in parts and "kv_cache" not in parts
    # Prefill keeps what inference does: it fills the cache generation reads.
    assert prefill.attribution is not None and any(
        c.name == "kv_cache" and c.cpu_us > 0 for layer in prefill.attribution.layers
        for c in layer.components)
