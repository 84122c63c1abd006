"""Whole models: built (transformers from a config, or a user's factory), their attention
located, and labelled so that a trace says which layer and which part of attention every
op belongs to.

* :mod:`.hf` — transformers, imported only here and only when a model needs it.
* :mod:`.builtin` — the built-in models (gpt2, llama, bert, vit) from a config.
* :mod:`.factory` — ``path/to/file.py:factory`` / ``package.module:factory``.
* :mod:`.loaded` — what every source produces: a model, its inputs, what it is.
* :mod:`.sizes`, :mod:`.fits` — every size a config or flag gives, checked (positive,
  consistent, within the model's positions and memory) before anything is built.
* :mod:`.phases` — one step of prefill, decode (against the model's KV cache) or train.
* :mod:`.windows` — each attention call of a step: lengths, window, what its mask admitted.
* :mod:`.locate` — which modules are attention, layers, projections, the rest.
* :mod:`.instrument` — the ``record_function`` labels, installed and removed.
* :mod:`.implementations` — switching the attention implementation on the same weights,
  in every sub-model, checked per attention module.
"""
