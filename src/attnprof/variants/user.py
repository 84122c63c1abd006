"""User variants: any SDPA-compatible callable, named ``path/to/file.py:name`` or ``pkg.mod:name``.

The callable must accept ``(q, k, v, attn_mask=None, is_causal=False, scale=None,
enable_gqa=False)`` with q, k, v in [batch, heads, seq, head_dim] layout — the signature of
``F.scaled_dot_product_attention`` — so SDPA itself, a FlashAttention wrapper or a user's own
kernel plugs in unchanged. attnprof passes ``is_causal`` and, when K/V heads are grouped,
``enable_gqa=True``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnprof.errors import UsageError
from attnprof.spec.workload import Workload
from attnprof.variants.base import Built, Variant

if TYPE_CHECKING:
    import torch


def is_user_spec(name: str) -> bool:
    """True when ``name`` looks like ``something:callable`` rather than a registry name."""
    return ":" in name


def load_callable(spec: str, what: str = "variant") -> Callable[..., Any]:
    """Import the callable named by ``spec``; raise :class:`UsageError` on any mistake.

    ``what`` names the thing in messages (``variant``, ``model factory``)."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise UsageError(f"{what} {spec!r} is not of the form path/to/file.py:callable "
                         "or package.module:callable")
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _load_file(spec, Path(target), what)
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise UsageError(f"{what} {spec!r}: cannot import module {target!r} ({exc}); "
                             "check the name or give a file path instead") from None
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise UsageError(f"{what} {spec!r}: {target!r} has no attribute {attr!r}; "
                             "check the callable's name")
    if not callable(fn):
        raise UsageError(f"{what} {spec!r}: {attr!r} is not callable; name a function or "
                         "an nn.Module instance")
    return fn


def _load_file(spec: str, path: Path, what: str) -> Any:
    if not path.is_file():
        raise UsageError(f"{what} {spec!r}: file {str(path)!r} does not exist; "
                         "check the path (relative to the current directory)")
    name = f"attnprof_user_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:  # two variants from one file share its module and its state
        return sys.modules[name]
    mod_spec = importlib.util.spec_from_file_location(name, path)
    if mod_spec is None or mod_spec.loader is None:
        raise UsageError(f"{what} {spec!r}: cannot load {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[name] = module
    try:
        mod_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # the file failed to import: say so in one line
        del sys.modules[name]  # so that a second try imports it again instead of the husk
        raise UsageError(f"{what} {spec!r}: importing {str(path)!r} failed with "
                         f"{type(exc).__name__}: {exc}") from None
    return module


def user_variant(spec: str) -> Variant:
    """A :class:`Variant` wrapping the user's callable (imported now, to fail early)."""
    fn = load_callable(spec)

    def build(w: Workload) -> Built:
        kwargs: dict[str, bool] = {"is_causal": w.is_causal}
        if w.groups > 1:
            kwargs["enable_gqa"] = True

        def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return fn(q, k, v, **kwargs)

        return Built(call=call)

    return Variant(name=spec, family="user", summary=f"user callable {spec}", build=build)
