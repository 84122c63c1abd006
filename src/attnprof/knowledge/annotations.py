"""attnprof's own trace annotations: how a captured step is labelled, so that any later
reader (the analysis, ``check``) finds "one forward of variant X" in the trace.

Models add two label families, defined here once so that the code that installs them
(:mod:`attnprof.models.instrument`) and the analysis that reads them back
(:mod:`attnprof.analysis.attribution`) cannot drift apart:

* ``attnprof.module::<role>::<path>`` around every call of a module attnprof located —
  a layer, an attention module, its projections, an MLP, a norm (see :data:`MODULE_ROLES`);
  ``path`` is the module's name in ``model.named_modules()``.
* ``attnprof.part::<part>::<detail>`` around a call inside a module that is not a module
  of its own: the attention core (the attention function the module called; ``detail``
  names it, e.g. ``sdpa`` or ``F.scaled_dot_product_attention``), the position encoding
  (``apply_rotary_pos_emb``, a relative-bias method) and the KV-cache update.

Neither starts with :data:`REGION_PREFIX`, so a model trace still has one region per step
(``attnprof::model/<implementation>/<phase>``) and the labels nest inside it. Attribution
goes by these code regions, never by op or kernel names, so an unknown kernel still lands
in the component whose code launched it.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "ATTENTION_ROLES",
    "MODULE_PREFIX",
    "MODULE_ROLES",
    "PARTS",
    "PART_PREFIX",
    "REGION_PREFIX",
    "Label",
    "module_label",
    "parse_label",
    "part_label",
    "region_name",
]

#: Every step attnprof captures runs inside ``record_function(REGION_PREFIX + variant)``.
REGION_PREFIX = "attnprof::"
MODULE_PREFIX = "attnprof.module::"
PART_PREFIX = "attnprof.part::"

#: What a labelled module is. ``layer``: one repeated block; ``attention``: a module taken as
#: attention (``cross_attention``: one whose keys and values come from another sequence, as
#: a decoder block's attention over the encoder's output); ``q_proj`` ... ``o_proj``: its
#: projections (``qkv_proj``: fused); the rest of a layer is ``mlp``, ``norm`` or
#: ``other``; outside the layers, ``embedding``, ``position`` (a rotary-embedding module)
#: and ``head`` (final norm, LM head, pooler, classifier).
MODULE_ROLES: tuple[str, ...] = (
    "layer", "attention", "cross_attention", "q_proj", "k_proj", "v_proj", "qkv_proj",
    "o_proj", "mlp", "norm", "other", "embedding", "position", "head",
)
#: Roles of the modules taken as attention.
ATTENTION_ROLES: tuple[str, ...] = ("attention", "cross_attention")
#: Parts of an attention module that are calls, not modules (``qkv_proj``: an in-projection
#: done by a function, as ``nn.MultiheadAttention`` does).
PARTS: tuple[str, ...] = ("core", "position", "kv_cache", "qkv_proj")


class Label(NamedTuple):
    """A parsed model label: ``family`` is ``module`` or ``part``."""

    family: str
    role: str
    detail: str


def region_name(variant: str) -> str:
    """The ``record_function`` label of one step of ``variant``, as the trace holds it.

    Kineto writes any name with a character outside printable ASCII as ``unknown`` (so
    a variant in ``café/attn.py`` would lose its region) and every ``\\`` as ``/``: such
    characters are written as ``%XX`` escapes of their UTF-8 bytes instead."""
    return REGION_PREFIX + "".join(c if " " <= c <= "~" and c != "\\" else _percent(c)
                                   for c in variant)


def _percent(char: str) -> str:
    return "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))


def module_label(role: str, path: str) -> str:
    """The label around each call of the module at ``path``, playing ``role``."""
    return f"{MODULE_PREFIX}{role}::{path}"


def part_label(part: str, detail: str) -> str:
    """The label around a call inside a module (``core``, ``position``, ``kv_cache``)."""
    return f"{PART_PREFIX}{part}::{detail}"


def parse_label(name: str) -> Label | None:
    """The parts of a model label, or ``None`` for any other name."""
    for family, prefix in (("module", MODULE_PREFIX), ("part", PART_PREFIX)):
        if name.startswith(prefix):
            role, sep, detail = name[len(prefix):].partition("::")
            if sep:
                return Label(family, role, detail)
    return None
