"""The flat registry of attention variants (one module per family).

``resolve_variants(["naive", "sdpa-flash", "my_attn.py:attention"])`` turns names into
:class:`Variant` objects, importing user callables eagerly so a bad path fails before any
measurement starts.

:data:`REGISTRY` is the default set a bare ``attnprof`` compares. :data:`OPT_IN` variants
run only when named: paged decode (``paged``, ``paged-flex``, any block size as
``paged@64``), which answers a decode-only question, and third-party kernels (flash-attn,
xformers, FlashInfer), which on a machine without them or without CUDA would add only
``unsupported`` rows to the default table.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnprof.errors import UsageError
from attnprof.variants.base import Built, Support, Variant
from attnprof.variants.flex import FLEX, FLEX_EAGER
from attnprof.variants.gqa import GQA_NATIVE, GQA_REPEAT_KV
from attnprof.variants.mha_module import MHA_MODULE
from attnprof.variants.naive import NAIVE, NAIVE_INPLACE
from attnprof.variants.packing import PACKING
from attnprof.variants.paged import PAGED, PAGED_FLEX, is_paged_name, paged_from_name
from attnprof.variants.sdpa import SDPA, SDPA_PINNED
from attnprof.variants.sliding_window import SLIDING_WINDOW
from attnprof.variants.third_party import THIRD_PARTY
from attnprof.variants.user import is_user_spec, user_variant
from attnprof.workload.problem import Workload

#: Every built-in variant, in the order comparisons list them.
REGISTRY: dict[str, Variant] = {
    v.name: v
    for v in (NAIVE, NAIVE_INPLACE, SDPA, *SDPA_PINNED, FLEX, FLEX_EAGER, GQA_NATIVE,
              GQA_REPEAT_KV, SLIDING_WINDOW, MHA_MODULE)
}
#: The packing alternatives to a padded batch (variants/packing.py): by name, and by default
#: on a ``--mask padding`` workload only (elsewhere each would be a row of "unsupported").
PACKING_REGISTRY: dict[str, Variant] = {v.name: v for v in PACKING}
#: Every built-in variant by name.
BUILTINS: dict[str, Variant] = {**REGISTRY, **PACKING_REGISTRY}

#: Registered variants that run only when named (see the module docstring), by name.
OPT_IN: dict[str, Variant] = {
    "paged": PAGED, "paged-flex": PAGED_FLEX, **{v.name: v for v in THIRD_PARTY}}


def get_variant(name: str) -> Variant:
    """The registered variant called ``name``, or a user variant for ``file.py:callable``."""
    if name in BUILTINS:
        return BUILTINS[name]
    if name in OPT_IN:
        return OPT_IN[name]
    if is_paged_name(name):
        return paged_from_name(name)
    if is_user_spec(name):
        return user_variant(name)
    raise UsageError(f"unknown variant {name!r}; choose from {', '.join([*BUILTINS, *OPT_IN])} "
                     "or give path/to/file.py:callable")


def resolve_variants(names: Sequence[str | Variant] | None,
                     workload: Workload | None = None) -> list[Variant]:
    """Variants for ``names`` (all built-ins when empty, with the packing ones when
    ``workload`` is a padded batch), duplicates removed, order kept.

    Already-resolved :class:`Variant` objects pass through unchanged.
    """
    if not names:
        padded = workload is not None and workload.mask_kind == "padding"
        return [*REGISTRY.values(), *(PACKING if padded else ())]
    seen: dict[str, Variant] = {}
    for item in names:
        if isinstance(item, Variant):
            seen.setdefault(item.name, item)
            continue
        name = item.strip()
        if name and name not in seen:
            seen[name] = get_variant(name)
    if not seen:
        raise UsageError("--variants is empty; name at least one variant")
    return list(seen.values())


__all__ = ["BUILTINS", "OPT_IN", "PACKING_REGISTRY", "REGISTRY", "Built", "Support", "Variant",
           "get_variant", "resolve_variants"]
