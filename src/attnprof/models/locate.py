"""Which modules of a model are attention, which are its layers, and what the rest is.

attnprof finds attention itself, by what a module's code does, not by its name:

* transformers attention: the module's ``forward`` dispatches through
  ``ALL_ATTENTION_FUNCTIONS`` (whatever ``attn_implementation`` it is set to);
* ``nn.MultiheadAttention``;
* any module whose ``forward`` calls ``scaled_dot_product_attention`` or
  ``flex_attention``;
* modules whose path or class matches ``--attention-module REGEX`` (hand-written).

What the parts of attention do is read from one forward of the model when the caller
gives one (``probe``; :mod:`attnprof.models.structure`), by how data flows: the
projections whose output reaches the core's queries, keys and values, the one that takes
the core's output (whatever each is called: ``o_proj``, ``out``, ``dense``, ``wo``, an
index in an ``nn.Sequential``), and whether the keys come from the module's own input
(self-attention) or another sequence (cross-attention, labelled ``cross_attention``). When
the module found holds no output projection but a module between it and its layer
consumes its output (BERT's and ViT's self-attention beside their ``...SelfOutput``), that
module is taken, so the output projection counts as attention. Without a probe (or for a
module the probe did not see run), names decide (:mod:`attnprof.knowledge.model_parts`),
and a parent ``...Attention`` is taken when it holds an output projection by name.

A layer is the block an attention module sits in: its path up to the first numeric index
(``model.layers.3``). The rest of a layer is a norm (by class) or the MLP; outside the
layers, embeddings, rotary-embedding modules and the head.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from attnprof.knowledge.model_parts import (
    CROSS_ATTENTION_NAMES,
    HEAD_NAMES,
    is_norm,
    projection_role,
)
from attnprof.models.structure import Structure, probe_structure

if TYPE_CHECKING:
    import torch

__all__ = ["Found", "Located", "locate"]

_MLP = re.compile(r"mlp|ffn|feed_?forward|intermediate|output|fc\d?|dense|LayerFF|expert|moe",
                  re.IGNORECASE)
_EMBED_NAMES = re.compile(r"(?:^|\.)(?:wte|wpe|embed_tokens|embed_positions|embeddings|shared"
                          r"|patch_embed|word_embeddings|embed)$")


@dataclass(frozen=True)
class Found:
    """An attention module: where it is, what it is, and how it was recognised."""

    path: str
    cls: str
    recognised_by: str
    layer: str | None
    #: ``self`` or ``cross`` (its keys and values come from another sequence).
    kind: str = "self"


@dataclass
class Located:
    """The model's attention modules, layers and the role of every module to label."""

    attention: list[Found]
    layers: list[str]
    #: Module path -> role (see :data:`attnprof.knowledge.annotations.MODULE_ROLES`).
    roles: dict[str, str] = field(default_factory=dict)
    modules: dict[str, torch.nn.Module] = field(default_factory=dict)

    def parts_of(self, attention_path: str) -> list[str]:
        """Roles labelled inside one attention module (projections), in path order."""
        prefix = attention_path + "." if attention_path else ""
        return [f"{role} {path}" for path, role in self.roles.items()
                if path.startswith(prefix) and role.endswith("_proj")]


def locate(model: torch.nn.Module, pattern: str | None = None,
           probe: Callable[[], object] | None = None) -> Located:
    """Find attention, layers and roles in ``model`` (see the module doc); ``probe`` runs
    one forward of it, to read what the parts of attention do."""
    modules = dict(model.named_modules())
    rx = re.compile(pattern) if pattern else None
    recognised: dict[str, str] = {}
    for path, module in modules.items():
        how = _recognise(module, path, rx)
        if how:
            recognised[path] = how
    # The outermost wins: a matched module's own attention child is its core, not a second
    # attention module.
    outer = {p: h for p, h in recognised.items()
             if not any(_inside(p, q) for q in recognised if q != p)}
    structure = None
    if probe is not None and outer:
        holders = {_parent(p): p for p in outer if _parent(p) not in ("", _layer_of(p))}
        structure = probe_structure(modules, list(outer), holders, probe)
    promoted: dict[str, tuple[str, str]] = {}
    for p, h in outer.items():
        seen = structure is not None and p in structure.ran
        up = structure.holders.get(p, p) if seen else _promote(p, modules)  # type: ignore[union-attr]
        kind = structure.kinds.get(p, "self") if seen else _named_kind(p, modules)  # type: ignore[union-attr]
        promoted[up] = (h if up == p else f"{h}, in {p}; its parent holds the output "
                        "projection", kind)
    attention = [Found(path=p, cls=type(modules[p]).__name__, recognised_by=h,
                       layer=_layer_of(p), kind=kind)
                 for p, (h, kind) in sorted(promoted.items(),
                                            key=lambda kv: _order(kv[0], modules))]
    layers = list(dict.fromkeys(f.layer for f in attention if f.layer is not None))
    located = Located(attention=attention, layers=layers, modules=modules)
    _assign_roles(located, modules, structure)
    return located


def _named_kind(path: str, modules: dict[str, torch.nn.Module]) -> str:
    """Without a probe: ``cross`` when the module's name or class says so."""
    name = path.rpartition(".")[2]
    cls = type(modules[path]).__name__
    return "cross" if CROSS_ATTENTION_NAMES.search(name) or CROSS_ATTENTION_NAMES.search(cls) \
        else "self"


def _recognise(module: torch.nn.Module, path: str, rx: re.Pattern[str] | None) -> str | None:
    import torch

    cls = type(module).__name__
    if rx is not None and path and (rx.search(path) or rx.fullmatch(cls)):
        return f"--attention-module {rx.pattern!r}"
    if isinstance(module, torch.nn.MultiheadAttention):
        return "nn.MultiheadAttention"
    names = _forward_names(type(module))
    if "ALL_ATTENTION_FUNCTIONS" in names:
        return "transformers attention interface (config._attn_implementation)"
    if "scaled_dot_product_attention" in names:
        return "forward calls scaled_dot_product_attention"
    if "flex_attention" in names:
        return "forward calls flex_attention"
    return None


_NAMES_CACHE: dict[type, frozenset[str]] = {}


def _forward_names(cls: type) -> frozenset[str]:
    """Global and attribute names the class's ``forward`` code refers to (decorators
    unwrapped; functions defined inside it too), once per class."""
    if cls not in _NAMES_CACHE:
        names: set[str] = set()
        forward = inspect.unwrap(getattr(cls, "forward", None) or (lambda: None))
        todo = [getattr(forward, "__code__", None)]
        while todo:
            code = todo.pop()
            if isinstance(code, types.CodeType):
                names.update(code.co_names)
                todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        _NAMES_CACHE[cls] = frozenset(names)
    return _NAMES_CACHE[cls]


def _inside(path: str, outer: str) -> bool:
    return outer == "" or path.startswith(outer + ".")


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _promote(path: str, modules: dict[str, torch.nn.Module]) -> str:
    """The parent ``...Attention`` module when it, not ``path``, holds the output projection."""
    if not path:
        return path
    parent = _parent(path)
    if not type(modules[parent]).__name__.endswith("Attention") or parent == "":
        return path
    if _has_role(path, "o_proj", modules):
        return path
    siblings = [p for p in modules if _parent(p) == parent and p != path]
    if any(_has_role(s, "o_proj", modules) for s in siblings):
        return parent
    return path


def _has_role(root: str, role: str, modules: dict[str, torch.nn.Module]) -> bool:
    return any(projection_role(p.rpartition(".")[2]) == role
               for p in modules if p != root and _inside(p, root))


def _layer_of(path: str) -> str | None:
    """The path up to its first numeric component (the repeated block), else the parent."""
    parts = path.split(".") if path else []
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: i + 1])
    if not parts:
        return None
    return _parent(path) or path


def _order(path: str, modules: dict[str, torch.nn.Module]) -> int:
    return list(modules).index(path)


def _assign_roles(located: Located, modules: dict[str, torch.nn.Module],
                  structure: Structure | None) -> None:
    roles: dict[str, str] = {}
    attention = [f.path for f in located.attention]
    layers = set(located.layers)
    for found in located.attention:
        path = found.path
        roles[path] = "cross_attention" if found.kind == "cross" else "attention"
        probed = structure is not None and (path in structure.ran or any(
            h == path for h in structure.holders.values()))
        for sub in modules:
            if sub == path or not _inside(sub, path):
                continue
            if any(_inside(sub, p) for p in roles if roles[p].endswith("_proj")):
                continue  # inside a projection already labelled
            role = (structure.roles.get(sub) if probed  # type: ignore[union-attr]
                    else projection_role(sub.rpartition(".")[2]))
            if role is not None:
                roles[sub] = role
            elif _is_norm(modules[sub]) and not any(_inside(sub, r) and roles[r] == "norm"
                                                    for r in roles):
                roles[sub] = "norm"
    for layer in located.layers:
        roles.setdefault(layer, "layer")
    _label_rest(modules, roles, attention, layers)
    located.roles = {p: roles[p] for p in modules if p in roles}


def _label_rest(modules: dict[str, torch.nn.Module], roles: dict[str, str],
                attention: list[str], layers: set[str]) -> None:
    """Label what is not attention: the rest of each layer, and outside the layers."""
    claimed = set(roles)

    def holds(path: str, targets: set[str] | list[str]) -> bool:
        return any(t != path and _inside(t, path) for t in targets)

    for path, module in modules.items():
        if path in claimed or any(_inside(path, c) and c != path and roles.get(c) in (
                "attention", "cross_attention", "mlp", "norm", "other", "embedding",
                "position", "head")
                for c in claimed):
            continue
        if path == "" or holds(path, attention) or holds(path, layers) \
                or _never_called(module):
            continue  # a container: its children are labelled instead
        in_layer = any(_inside(path, layer) for layer in layers)
        role = _rest_role(path, module, in_layer)
        if role is not None and not any(_inside(path, c) for c in claimed if c != ""
                                        and roles.get(c) != "layer"):
            roles[path] = role
            claimed.add(path)


def _never_called(module: torch.nn.Module) -> bool:
    """A ``ModuleDict``/``ModuleList`` holds modules but is never called itself (its
    ``forward`` is ``nn.Module``'s unimplemented one): a label on it would never open."""
    import torch

    return type(module).forward is torch.nn.Module.forward


def _rest_role(path: str, module: torch.nn.Module, in_layer: bool) -> str | None:
    cls = type(module).__name__
    has_params = any(True for _ in module.parameters(recurse=True))
    if "Rotary" in cls:
        return "position"
    if _is_norm(module):
        return "norm" if in_layer else "head"
    if not has_params:
        return None  # dropout, activations: their time is the container's
    if in_layer:
        return "mlp" if _MLP.search(path.rpartition(".")[2]) or _MLP.search(cls) else "other"
    if "Embedding" in cls or _EMBED_NAMES.search(path):
        return "embedding"
    if HEAD_NAMES.search(path):
        return "head"
    return "other"


def _is_norm(module: torch.nn.Module) -> bool:
    return is_norm(type(module).__name__)
