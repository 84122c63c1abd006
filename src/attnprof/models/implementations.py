"""Switching the attention implementation on the same weights, and pinning SDPA backends.

transformers models switch with ``set_attn_implementation`` (the weights stay; only the
function the attention modules dispatch to changes). transformers 5 applies it to the
model's own config and to sub-models whose config is of another class, but not to
sub-models holding a *copy* of a config of the same class: T5's encoder and decoder stacks
kept ``sdpa`` when ``eager`` was set, so an "eager" run ran SDPA in every layer. Every
sub-model is therefore switched on its own, and the switch is then checked where it
matters: the config each attention module dispatches on. A module left on another
implementation makes the row ``unsupported`` with the modules named, never a row that
claims an implementation it did not run. An implementation the model refuses raises
there, and its message is the reason the row shows. SDPA backends are pinned with
``torch.nn.attention.sdpa_kernel`` around every call, which works for any module that
calls SDPA, transformers or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from attnprof.formatting import one_line
from attnprof.models.loaded import LoadedModel
from attnprof.models.locate import Located
from attnprof.workload.model_spec import SDPA_PINS

__all__ = ["MODEL_DEFAULT", "Refused", "dispatch_family", "pinned", "snapshot",
           "switch_implementation", "with_pin"]

#: The implementation name of a plain nn.Module run as it is.
MODEL_DEFAULT = "as-built"


class Refused(Exception):
    """The model does not support an implementation (the message says why)."""


def dispatch_family(name: str) -> str | None:
    """What a requested implementation dispatches to: ``sdpa`` for SDPA and its pinned
    backends, ``eager``, ``flex_attention``; ``None`` for a plain module run as built."""
    if name == MODEL_DEFAULT:
        return None
    return "sdpa" if name in SDPA_PINS else name


def default_implementation(loaded: LoadedModel) -> str:
    """What the model runs unless told otherwise."""
    model: Any = loaded.model
    if loaded.is_transformers:
        return str(model.config._attn_implementation or "eager")
    return MODEL_DEFAULT


def snapshot(loaded: LoadedModel) -> Callable[[], None]:
    """A call that puts every sub-model's implementation back as it is now (a model may
    be built with its parts on different implementations)."""
    saved = ([(m, m.config._attn_implementation) for m in _sub_models(loaded.model)]
             if loaded.is_transformers else [])

    def restore() -> None:
        for module, impl in saved:
            with contextlib.suppress(Exception):  # it ran before; nothing to report
                module.set_attn_implementation(impl)

    return restore


def switch_implementation(loaded: LoadedModel, name: str, located: Located) -> None:
    """Make the model and every sub-model dispatch to ``name`` (SDPA pins switch to
    ``sdpa``); :class:`Refused` with transformers' own message when the model cannot, or
    naming the attention modules that still dispatch elsewhere."""
    base = dispatch_family(name)
    if base is None:
        return
    model: Any = loaded.model
    if not loaded.is_transformers:
        if name in SDPA_PINS:
            return  # pinned around the call; works for any module that calls SDPA
        raise Refused(f"{type(loaded.model).__name__} is a plain nn.Module: it has no "
                      "attn_implementation to switch (only sdpa backends can be pinned)")
    for sub in _sub_models(model):
        if sub.config._attn_implementation == base and sub is not model:
            continue
        try:
            sub.set_attn_implementation(base)
        except Exception as exc:  # transformers' refusal, in its words
            raise Refused(one_line(str(exc), 400)) from None
    actual = model.config._attn_implementation
    if actual != base:
        raise Refused(f"{type(model).__name__} kept attn_implementation {actual!r} when "
                      f"{base!r} was set")
    stale = stale_modules(located, base)
    if stale:
        paths = [p or "(the model)" for p, _ in stale]
        kept = sorted({impl for _, impl in stale})
        shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4
                                        else "")
        raise Refused(f"{len(paths)} attention module(s) kept attn_implementation "
                      f"{' / '.join(map(repr, kept))} when {base!r} was set ({shown}): "
                      f"{type(model).__name__} cannot run {name} in every layer")


def stale_modules(located: Located, base: str) -> list[tuple[str, str]]:
    """``(path, implementation)`` of each config-holding module inside an attention module
    whose config dispatches to something other than ``base``."""
    out: list[tuple[str, str]] = []
    roots = [f.path for f in located.attention]
    for path, module in located.modules.items():
        if not any(r == "" or path == r or path.startswith(r + ".") for r in roots):
            continue
        impl = getattr(getattr(module, "config", None), "_attn_implementation", None)
        if isinstance(impl, str) and impl != base:
            out.append((path, impl))
    return out


def _sub_models(model: Any) -> list[Any]:
    """The model and every ``PreTrainedModel`` inside it holding a config object of its
    own (each switches separately); the model first."""
    from transformers.modeling_utils import PreTrainedModel

    seen: set[int] = set()
    out = []
    for module in model.modules():
        if isinstance(module, PreTrainedModel) and id(module.config) not in seen:
            seen.add(id(module.config))
            out.append(module)
    return out


@contextlib.contextmanager
def pinned(name: str) -> Iterator[None]:
    """The SDPA backend of ``name`` pinned for the block (nothing for other names)."""
    if name not in SDPA_PINS:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, SDPA_PINS[name])):
        yield


def with_pin(name: str, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` run with ``name``'s SDPA backend pinned."""
    if name not in SDPA_PINS:
        return call

    def pinned_call() -> Any:
        with pinned(name):
            return call()

    return pinned_call
