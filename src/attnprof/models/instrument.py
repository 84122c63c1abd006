"""attnprof's labels on a model: ``record_function`` ranges around every located module
and around the calls inside attention that are not modules.

Installed for a block and removed after it (:func:`labelled`), so the model is left as it
was. Labels follow :mod:`attnprof.knowledge.annotations`:

* every located module (layer, attention, projections, MLP, norms, embeddings, head) has
  its ``forward`` wrapped (on the instance) in its label, closed also when it raises;
* the attention core is the attention function the module calls: each entry of
  transformers' ``ALL_ATTENTION_FUNCTIONS``, each modeling module's
  ``eager_attention_forward``, and ``torch.nn.functional.scaled_dot_product_attention`` are
  wrapped while labels are on, so whichever one runs is labelled with its name;
* position encodings (``apply_rotary_pos_emb`` in a modeling module, T5's
  ``compute_bias``), the KV-cache update (``Cache.update`` and the subclasses that define
  their own) and ``nn.MultiheadAttention``'s functional in-projection likewise.

A label opens a range only while a profiler records (one C call checks); otherwise it costs
the wrapper's own call, so a decode step of many small modules pays little for carrying them.
The run measures what they cost end to end (``PhaseRun.instrumentation_overhead``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnprof.knowledge.annotations import module_label, part_label
from attnprof.knowledge.model_parts import POSITION_FUNCTIONS, POSITION_METHODS
from attnprof.models.call_sites import (
    Patch,
    apply_patch,
    cache_classes,
    core_patches,
    modeling_modules,
    undo_patch,
)
from attnprof.models.locate import Located

if TYPE_CHECKING:
    import torch

__all__ = ["Patch", "labelled", "planned_patches"]


@dataclass
class _Installed:
    #: Each labelled module with the instance ``forward`` it had before (None: none).
    forwards: list[tuple[Any, Any]] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)


def planned_patches(located: Located) -> list[Patch]:
    """Every function the labels wrap for this model (see the module doc)."""
    import torch.nn.functional as F

    modeling = modeling_modules(located.modules[f.path] for f in located.attention)
    patches = core_patches(modeling)
    for mod in modeling:
        for fn in POSITION_FUNCTIONS:
            if callable(getattr(mod, fn, None)):
                patches.append(Patch(mod, fn, part_label("position", fn)))
    patches.append(Patch(F, "scaled_dot_product_attention",
                         part_label("core", "F.scaled_dot_product_attention")))
    for fn in ("_in_projection_packed", "_in_projection"):
        if hasattr(F, fn):
            patches.append(Patch(F, fn, part_label("qkv_proj", f"F.{fn}")))
    for cache_cls in cache_classes():
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
    """Labels on for the block: module and function wrappers, removed after."""
    installed = _Installed()
    try:
        for path, role in located.roles.items():
            _label_forward(located.modules[path], module_label(role, path), installed)
        for patch in planned_patches(located):
            apply_patch(patch, _wrap)
            installed.patches.append(patch)
        yield
    finally:
        for module, own in reversed(installed.forwards):
            if own is None:
                with contextlib.suppress(AttributeError):
                    object.__delattr__(module, "forward")
            else:
                object.__setattr__(module, "forward", own)
        for patch in reversed(installed.patches):
            undo_patch(patch)


def _label_forward(module: torch.nn.Module, label: str, installed: _Installed) -> None:
    """Wrap the module's ``forward`` (on the instance) in its label.

    A wrapper, not a pair of forward hooks: a module with hooks takes ``nn.Module``'s slow
    call path (the hook dictionaries walked, the arguments repacked) on every call, labels
    off or on — 3 to 9 µs a module call, up to 18% of a small decode step — while the
    wrapper's call and one C call that finds the profiler off were not told from noise in
    the same paired measurement (``benchmarks/bench_labels_cost.py``).
    ``functools.wraps`` keeps ``inspect.signature(module.forward)`` what it was
    (generation code reads it). An instance ``forward`` set before (someone else's
    wrapper) is wrapped in turn and put back after.
    """
    from torch._C._autograd import _profiler_enabled
    from torch.autograd.profiler import record_function

    own = module.__dict__.get("forward")
    forward = module.forward

    @functools.wraps(forward)
    def labelled_forward(*args: Any, **kwargs: Any) -> Any:
        if not _profiler_enabled():
            return forward(*args, **kwargs)
        with record_function(label):
            return forward(*args, **kwargs)

    labelled_forward.__attnprof_label__ = label  # type: ignore[attr-defined]
    object.__setattr__(module, "forward", labelled_forward)
    installed.forwards.append((module, own))


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
