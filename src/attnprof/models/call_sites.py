"""The calls inside attention that are not modules, and how one is swapped for a wrapper
and put back.

Two readers wrap them: the labels (:mod:`attnprof.models.instrument`), which put a
``record_function`` range around each, and the structure probe
(:mod:`attnprof.models.structure`), which marks what each one returns as the attention
core's output. Both must see the same functions, so the list is kept here once:

* the attention function a transformers module dispatches to — each entry of
  ``ALL_ATTENTION_FUNCTIONS`` (its ``AttentionInterface`` mapping) — and each modeling
  module's own ``eager_attention_forward``, which the eager path calls instead;
* ``flex_attention`` where a modeling module imported it by name (a call through the
  module's globals, which a patch of ``torch.nn.attention.flex_attention`` would miss).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from attnprof.knowledge.annotations import part_label

if TYPE_CHECKING:
    import torch

__all__ = ["Patch", "apply_patch", "attention_interface", "cache_classes", "core_patches",
           "modeling_modules", "undo_patch"]

Wrapper = Callable[[Callable[..., Any], str], Callable[..., Any]]


@dataclass
class Patch:
    """One attribute replaced by a wrapper while it is installed."""

    owner: Any
    name: str
    label: str
    original: Any = None
    instance: bool = False  # set on an instance (removed after) rather than replaced


def core_patches(modeling: Iterable[ModuleType]) -> list[Patch]:
    """The attention functions a model's attention modules can call (see the module doc),
    each labelled ``attnprof.part::core::<name>``."""
    patches: list[Patch] = []
    for mod in modeling:
        for fn, detail in (("eager_attention_forward", "eager"),
                           ("flex_attention", "flex_attention")):
            if callable(getattr(mod, fn, None)):
                patches.append(Patch(mod, fn, part_label("core", detail)))
    interface = attention_interface()
    if interface is not None:
        for key in list(interface._global_mapping):
            patches.append(Patch(interface._global_mapping, key, part_label("core", key)))
    return patches


def apply_patch(patch: Patch, wrap: Wrapper) -> None:
    """Replace the patched attribute by ``wrap(original, patch.label)``."""
    if isinstance(patch.owner, dict):
        patch.original = patch.owner[patch.name]
        patch.owner[patch.name] = wrap(patch.original, patch.label)
        return
    if patch.instance:
        patch.original = getattr(patch.owner, patch.name)  # bound method
        object.__setattr__(patch.owner, patch.name, wrap(patch.original, patch.label))
        return
    patch.original = patch.owner.__dict__[patch.name] if isinstance(patch.owner, type) \
        else getattr(patch.owner, patch.name)
    setattr(patch.owner, patch.name, wrap(patch.original, patch.label))


def undo_patch(patch: Patch) -> None:
    """Put back what :func:`apply_patch` replaced (nothing if it was not applied)."""
    if patch.original is None:
        return
    if isinstance(patch.owner, dict):
        patch.owner[patch.name] = patch.original
    elif patch.instance:
        with contextlib.suppress(AttributeError):
            object.__delattr__(patch.owner, patch.name)
    else:
        setattr(patch.owner, patch.name, patch.original)
    patch.original = None


def modeling_modules(attention: Iterable[torch.nn.Module]) -> list[ModuleType]:
    """The Python modules defining the attention modules' classes and their submodules'
    (a modeling file's functions live beside its classes); never torch's own."""
    names: set[str] = set()
    for module in attention:
        names.update(type(sub).__module__ for sub in module.modules())
    return [sys.modules[n] for n in sorted(names) if n in sys.modules
            and not n.startswith("torch.")]


def attention_interface() -> Any:
    """transformers' attention registry, when transformers is already imported."""
    if "transformers" not in sys.modules:
        return None
    try:
        from transformers.modeling_utils import AttentionInterface
    except ImportError:
        return None
    return AttentionInterface


def cache_classes() -> list[type]:
    """transformers' cache classes (and layers) that define their own ``update``."""
    if "transformers" not in sys.modules:
        return []
    try:
        from transformers import cache_utils
    except ImportError:
        return []
    found: list[type] = []
    todo: list[type] = [cache_utils.Cache]
    while todo:
        cls = todo.pop()
        if "update" in cls.__dict__ and cls not in found:
            found.append(cls)
        todo.extend(cls.__subclasses__())
    return found
