"""What the parts of a transformer are called: names that say which role a module plays.

These names are the fallback: attnprof reads what the parts of attention do from one
forward of the model (:mod:`attnprof.models.structure`) and goes by names only where it
cannot (a module the forward did not run). There, projections are recognised by the name
a module has inside its attention module (the last component of its path), the way the
field writes them: Llama's ``q_proj``, BERT's ``query``, GPT-2's fused ``c_attn``,
DistilBERT's ``q_lin``, T5's ``q``. Everything else in a layer is a norm (its class says
so) or the MLP. These are facts about naming, kept apart
from the code that walks a model so a new spelling is one line here.
"""

from __future__ import annotations

import re

__all__ = ["CROSS_ATTENTION_NAMES", "HEAD_NAMES", "POSITION_FUNCTIONS", "POSITION_METHODS",
           "PROJECTION_NAMES", "is_norm", "projection_role"]

#: Role -> the module names that play it inside an attention module.
PROJECTION_NAMES: dict[str, re.Pattern[str]] = {
    "qkv_proj": re.compile(r"^(?:qkv_proj|qkv|c_attn|Wqkv|query_key_value|W_pack|in_proj)$"),
    "q_proj": re.compile(r"^(?:q_proj|query|q|q_lin|to_q|wq)$"),
    "k_proj": re.compile(r"^(?:k_proj|key|k|k_lin|to_k|wk)$"),
    "v_proj": re.compile(r"^(?:v_proj|value|v|v_lin|to_v|wv)$"),
    "o_proj": re.compile(r"^(?:o_proj|out_proj|c_proj|dense|o|out_lin|to_out|wo|proj)$"),
}

#: Module-level functions that apply a position encoding inside attention, wrapped in a
#: ``position`` part label where the module's code calls them.
POSITION_FUNCTIONS: tuple[str, ...] = ("apply_rotary_pos_emb", "apply_rotary_emb",
                                       "build_alibi_tensor")
#: Methods of attention modules that compute a position bias (T5's relative bias).
POSITION_METHODS: tuple[str, ...] = ("compute_bias",)

#: Names (a module's last path component, or its class) that say an attention module reads
#: another sequence: T5's ``EncDecAttention``, BART's and Whisper's ``encoder_attn``,
#: BERT-as-decoder's ``crossattention``, torch's ``multihead_attn`` in a decoder layer.
CROSS_ATTENTION_NAMES = re.compile(r"cross|encoder_attn|EncDec|multihead_attn",
                                   re.IGNORECASE)

#: Names of the modules after the last layer that turn hidden states into outputs.
HEAD_NAMES = re.compile(r"(?:^|\.)(?:lm_head|head|pooler|classifier|score|qa_outputs"
                        r"|cls|final_layer_norm|norm|ln_f|layernorm|final_norm)$")


def projection_role(name: str) -> str | None:
    """The projection role of a module called ``name`` (its last path component)."""
    for role, pattern in PROJECTION_NAMES.items():
        if pattern.match(name):
            return role
    return None


def is_norm(class_name: str) -> bool:
    """Whether a module class is a normalisation (``LayerNorm``, ``LlamaRMSNorm``,
    ``T5LayerNorm``, ``GroupNorm`` ...): its name says so."""
    return "norm" in class_name.lower()
