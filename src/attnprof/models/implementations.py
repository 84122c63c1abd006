"""Switching the attention implementation on the same weights, and pinning SDPA backends.

transformers models switch with ``set_attn_implementation`` (the weights stay; only the
function the attention modules dispatch to changes). An implementation the model refuses
raises there, and its message is the reason the row shows. SDPA backends are pinned with
``torch.nn.attention.sdpa_kernel`` around every call, which works for any module that
calls SDPA, transformers or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from attnprof.formatting import one_line
from attnprof.models.loaded import LoadedModel
from attnprof.spec.model_spec import SDPA_PINS

__all__ = ["MODEL_DEFAULT", "Refused", "pinned", "switch_implementation"]

#: The implementation name of a plain nn.Module run as it is.
MODEL_DEFAULT = "as-built"


class Refused(Exception):
    """The model does not support an implementation (the message says why)."""


def default_implementation(loaded: LoadedModel) -> str:
    """What the model runs unless told otherwise."""
    model: Any = loaded.model
    if loaded.is_transformers:
        return str(model.config._attn_implementation or "eager")
    return MODEL_DEFAULT


def switch_implementation(loaded: LoadedModel, name: str) -> None:
    """Make the model dispatch to ``name`` (SDPA pins switch to ``sdpa``); :class:`Refused`
    with transformers' own message when the model cannot."""
    base = "sdpa" if name in SDPA_PINS else name
    model: Any = loaded.model
    if name == MODEL_DEFAULT:
        return
    if not loaded.is_transformers:
        if name in SDPA_PINS:
            return  # pinned around the call; works for any module that calls SDPA
        raise Refused(f"{type(loaded.model).__name__} is a plain nn.Module: it has no "
                      "attn_implementation to switch (only sdpa backends can be pinned)")
    try:
        model.set_attn_implementation(base)
    except Exception as exc:  # transformers' refusal, in its words
        raise Refused(one_line(str(exc))[:400]) from None
    actual = model.config._attn_implementation
    if actual != base:
        raise Refused(f"{type(loaded.model).__name__} kept attn_implementation "
                      f"{actual!r} when {base!r} was set")


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
