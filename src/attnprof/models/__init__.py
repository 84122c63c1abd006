"""Whole models: built (transformers from a config, or a user's factory), their attention
located, and labelled so that a trace says which layer and which part of attention every
op belongs to.

* :mod:`.hf` — transformers, imported only here and only when a model needs it.
* :mod:`.builtin` — the built-in models (gpt2, llama, bert, vit) from a config.
* :mod:`.factory` — ``path/to/file.py:factory`` / ``package.module:factory``.
* :mod:`.loaded` — what every source produces: a model, its inputs, what it is.
* :mod:`.locate` — which modules are attention, layers, projections, the rest.
* :mod:`.instrument` — the ``record_function`` labels, installed and removed.
* :mod:`.implementations` — switching the attention implementation on the same weights.
"""
