"""User variants: any SDPA-compatible callable, named ``path/to/file.py:name`` or ``pkg.mod:name``.

The callable must accept ``(q, k, v, attn_mask=None, is_causal=False, scale=None,
enable_gqa=False)`` with q, k, v in [batch, heads, seq, head_dim] layout — the signature of
``F.scaled_dot_product_attention`` — so SDPA itself, a FlashAttention wrapper or a user's own
kernel plugs in unchanged. attnprof passes ``is_causal`` and, when K/V heads are grouped,
``enable_gqa=True``. With a mask other than ``none`` or plain ``causal`` (``--mask``) it
passes the mask as SDPA takes it: ``attn_mask=`` a boolean [batch or 1, 1, q, k] tensor
(True = may attend) or, for ``bias``/``alibi``, a float [1, heads, q, k] tensor added to the
scores (``-inf`` where blocked), with ``is_causal=False`` (the mask holds the causal part).

A hand-written function that ignores ``enable_gqa`` fails on grouped K/V with PyTorch's bare
shape error (``The size of tensor a (8) must match the size of tensor b (2) ...``), which
says nothing about why; :func:`explain_grouped_kv_failure` turns it into a reason that does.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnprof.errors import UsageError
from attnprof.formatting import one_line
from attnprof.signals import reraise_stop
from attnprof.torch_state import TorchState
from attnprof.variants.base import Built, Variant
from attnprof.workload.problem import Workload

if TYPE_CHECKING:
    import torch


def is_user_spec(name: str) -> bool:
    """True when ``name`` looks like ``something:callable`` rather than a registry name."""
    return ":" in name


def load_callable(spec: str, what: str = "variant") -> Callable[..., Any]:
    """Import the callable named by ``spec``; raise :class:`UsageError` on any mistake.

    ``what`` names the thing in messages (``variant``, ``model factory``)."""
    try:  # the name goes into the record, its JSON and the trace: UTF-8 text
        spec.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} {spec!a} holds bytes that are not UTF-8 (a file or "
                         "folder name in another encoding); rename it to UTF-8") from None
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise UsageError(f"{what} {spec!r} is not of the form path/to/file.py:callable "
                         "or package.module:callable")
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _load_file(spec, Path(target), what)
    else:
        try:
            module = importlib.import_module(target)
        except BaseException as exc:  # not found, or failed while importing (any type)
            reraise_stop(exc)
            raise UsageError(f"{what} {spec!r}: cannot import module {target!r} "
                             f"({type(exc).__name__}: {exc}); check the name or give a "
                             "file path instead") from None
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
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"{what} {spec!r}: file {str(path)!r} does not exist; "
                         "check the path (relative to the current directory)")
    # A FIFO, a folder, a device or a loop of links: named as such, never imported.
    from attnprof.input_files import check_input

    check_input(path, f"{what} {spec!r}: file {str(path)!r}")
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
    except BaseException as exc:  # the user's file failed to import (or called sys.exit
        # or raised KeyboardInterrupt while importing, which must not end attnprof): say so
        # in one line; only a real stop signal goes on
        del sys.modules[name]  # so that a second try imports it again instead of the husk
        reraise_stop(exc)
        raise UsageError(f"{what} {spec!r}: importing {str(path)!r} failed with "
                         f"{type(exc).__name__}: {exc}") from None
    return module


# Words of PyTorch's shape errors (broadcast, matmul/bmm, view, einsum); a user's own error
# that names none of them is not taken for a grouped-head mismatch.
_SHAPE_ERROR = re.compile(r"(?i)\bsize|shape|dimension|broadcast")


def explain_grouped_kv_failure(exc: BaseException, _warnings: list[str],
                               workload: Workload) -> str | None:
    """Why a user function failed on grouped K/V heads, and the fix (``None``: not that).

    Only a shape error on a grouped workload qualifies: with as many K/V heads as query
    heads the same function may be fine, so the row is a refusal of the workload
    (``unsupported``), not a bug report.
    """
    if workload.groups == 1 or not isinstance(exc, (RuntimeError, ValueError, IndexError)):
        return None
    message = " ".join(str(exc).split())
    if not _SHAPE_ERROR.search(message):
        return None
    message = one_line(message, 200)
    return (f"it received K/V with {workload.num_kv_heads} heads for {workload.heads} query heads "
            f"(enable_gqa=True) and failed with {type(exc).__name__}: {message}; "
            f"pass --kv-heads {workload.heads} (equal to --heads), or honour enable_gqa=True "
            "(e.g. k.repeat_interleave(q.shape[1] // k.shape[1], dim=1), or SDPA's "
            "enable_gqa)")


#: What importing each user module changed in torch's global settings (put back at once),
#: by module target: every variant from that module says so in its notes.
_IMPORT_CHANGES: dict[str, list[str]] = {}


def user_variant(spec: str) -> Variant:
    """A :class:`Variant` wrapping the user's callable (imported now, to fail early).

    A module that changes torch's settings when imported (``torch.set_num_threads(1)`` at
    the top of the file) would change every variant's numbers: the settings are put back
    at once, and the variant's notes say what the import changed."""
    target = spec.rpartition(":")[0]
    state = TorchState()
    try:
        fn = load_callable(spec)
    finally:
        if changes := state.restore(quiet_rng=True):  # weights made at import: no news
            _IMPORT_CHANGES[target] = changes
    changed = _IMPORT_CHANGES.get(target)
    notes = (f"importing {target} changed torch's global state, put back before anything "
             f"ran: {'; '.join(changed)}",) if changed else ()

    def build(workload: Workload) -> Built:
        from attnprof.variants.masks import mask_window
        from attnprof.variants.sdpa import sdpa_kwargs

        kwargs = sdpa_kwargs(workload, mask_window(workload))

        def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return fn(q, k, v, **kwargs)

        return Built(call=call, notes=notes)

    return Variant(name=spec, family="user", summary=f"user callable {spec}", build=build,
                   explain_refusal=explain_grouped_kv_failure)
