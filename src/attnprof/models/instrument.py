"""attnprof's labels on a model: ``record_function`` ranges around every located module
and around the calls inside attention that are not modules.

Installed for a block and removed after it (:func:`labelled`), so the model is left as it
was. Labels follow :mod:`attnprof.knowledge.annotations`:

* every located module (layer, attention, projections, MLP, norms, embeddings, head) gets a
  forward pre-hook that opens its label and a forward hook that closes it (also when the
  forward raises);
* the attention core is the attention function the module calls: each entry of
  transformers' ``ALL_ATTENTION_FUNCTIONS``, each modeling module's
  ``eager_attention_forward``, and ``torch.nn.functional.scaled_dot_product_attention`` are
  wrapped while labels are on, so whichever one runs is labelled with its name;
* position encodings (``apply_rotary_pos_emb`` in a modeling module, T5's
  ``compute_bias``), the KV-cache update (``Cache.update`` and the subclasses that define
  their own) and ``nn.MultiheadAttention``'s functional in-projection likewise.

A label opens a range only while a profiler records (one C call checks); otherwise it costs
the hook's own call, so a decode step of many small modules pays little for carrying them.
The run measures what they cost end to end (``PhaseRun.instrumentation_overhead``).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from attnprof.knowledge.annotations import module_label, part_label
from attnprof.knowledge.model_parts import POSITION_FUNCTIONS, POSITION_METHODS
from attnprof.models.locate import Located

if TYPE_CHECKING:
    import torch

__all__ = ["Patch", "labelled", "planned_patches"]


@dataclass
class Patch:
    """One attribute replaced by a labelled wrapper while labels are on."""

    owner: Any
    name: str
    label: str
    original: Any = None
    instance: bool = False  # set on an instance (removed after) rather than replaced


@dataclass
class _Hooks:
    handles: list[Any] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)


def planned_patches(located: Located) -> list[Patch]:
    """Every function the labels wrap for this model (see the module doc)."""
    import torch.nn.functional as F

    patches: list[Patch] = []
    modules = _modeling_modules(located)
    for mod in modules:
        if callable(getattr(mod, "eager_attention_forward", None)):
            patches.append(Patch(mod, "eager_attention_forward", part_label("core", "eager")))
        for fn in POSITION_FUNCTIONS:
            if callable(getattr(mod, fn, None)):
                patches.append(Patch(mod, fn, part_label("position", fn)))
    interface = _attention_interface()
    if interface is not None:
        for key in list(interface._global_mapping):
            patches.append(Patch(interface._global_mapping, key, part_label("core", key)))
    patches.append(Patch(F, "scaled_dot_product_attention",
                         part_label("core", "F.scaled_dot_product_attention")))
    for fn in ("_in_projection_packed", "_in_projection"):
        if hasattr(F, fn):
            patches.append(Patch(F, fn, part_label("qkv_proj", f"F.{fn}")))
    for cache_cls in _cache_classes():
        patches.append(Patch(cache_cls, "update", part_label("kv_cache", "update")))
    for found in located.attention:
        module = located.modules[found.path]
        for method in POSITION_METHODS:
            if callable(getattr(module, method, None)):
                patches.append(Patch(module, method, part_label("position", method),
                                     instance=True))
    return patches


@contextlib.contextmanager
def labelled(located: Located) -> Iterator[None]:
    """Labels on for the block: module hooks and function wrappers, removed after."""
    hooks = _Hooks()
    try:
        for path, role in located.roles.items():
            _hook(located.modules[path], module_label(role, path), hooks)
        for patch in planned_patches(located):
            _apply(patch)
            hooks.patches.append(patch)
        yield
    finally:
        for handle in reversed(hooks.handles):
            handle.remove()
        for patch in reversed(hooks.patches):
            _undo(patch)


def _hook(module: torch.nn.Module, label: str, hooks: _Hooks) -> None:
    from torch._C._autograd import _profiler_enabled
    from torch.autograd.profiler import record_function

    open_ranges: list[Any] = []

    def enter(_module: Any, _args: Any) -> None:
        rf = None
        if _profiler_enabled():
            rf = record_function(label)
            rf.__enter__()
        open_ranges.append(rf)  # None keeps enter and leave paired

    def leave(_module: Any, _args: Any, _output: Any) -> None:
        if open_ranges:
            rf = open_ranges.pop()
            if rf is not None:
                rf.__exit__(None, None, None)

    hooks.handles.append(module.register_forward_pre_hook(enter))
    hooks.handles.append(module.register_forward_hook(leave, always_call=True))


def _wrap(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
    from torch._C._autograd import _profiler_enabled
    from torch.autograd.profiler import record_function

    @functools.wraps(fn)
    def labelled_call(*args: Any, **kwargs: Any) -> Any:
        if not _profiler_enabled():
            return fn(*args, **kwargs)
        with record_function(label):
            return fn(*args, **kwargs)

    labelled_call.__attnprof_label__ = label  # type: ignore[attr-defined]
    return labelled_call


def _apply(patch: Patch) -> None:
    if isinstance(patch.owner, dict):
        patch.original = patch.owner[patch.name]
        patch.owner[patch.name] = _wrap(patch.original, patch.label)
        return
    if patch.instance:
        patch.original = getattr(patch.owner, patch.name)  # bound method
        object.__setattr__(patch.owner, patch.name, _wrap(patch.original, patch.label))
        return
    patch.original = patch.owner.__dict__[patch.name] if isinstance(patch.owner, type) \
        else getattr(patch.owner, patch.name)
    setattr(patch.owner, patch.name, _wrap(patch.original, patch.label))


def _undo(patch: Patch) -> None:
    if patch.original is None:
        return
    if isinstance(patch.owner, dict):
        patch.owner[patch.name] = patch.original
    elif patch.instance:
        with contextlib.suppress(AttributeError):
            object.__delattr__(patch.owner, patch.name)
    else:
        setattr(patch.owner, patch.name, patch.original)


def _modeling_modules(located: Located) -> list[ModuleType]:
    """The Python modules defining the attention classes (and their layers)."""
    names = {type(located.modules[f.path]).__module__ for f in located.attention}
    for path in located.attention:
        for sub, module in located.modules.items():
            if sub.startswith(path.path + "."):
                names.add(type(module).__module__)
    return [sys.modules[n] for n in sorted(names) if n in sys.modules
            and not n.startswith("torch.")]


def _attention_interface() -> Any:
    """transformers' attention registry, when transformers is already imported."""
    if "transformers" not in sys.modules:
        return None
    try:
        from transformers.modeling_utils import AttentionInterface
    except ImportError:
        return None
    return AttentionInterface


def _cache_classes() -> list[type]:
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
