"""What each part of an attention module does, read from one forward of the model: which
of its submodules project the queries, the keys and the values, which one projects the
output, and whether its keys come from its own input (self-attention) or from another
sequence (cross-attention) — by the way data flows, never by a module's name.

One forward (:func:`probe_structure`) runs with every tensor *marked* by where it came
from, inside attention only:

* the query input an attention module receives (its first tensor argument, the hidden
  states) carries that module's ``in`` mark;
* every module with parameters inside attention (not a norm or an embedding) adds its own
  ``proj`` mark to what it returns, on top of what its input carried;
* every torch function called inside attention (a ``TorchFunctionMode``) passes its inputs'
  marks on to its outputs (in-place ones to the tensor they write);
* the *core* is where queries meet keys: ``scaled_dot_product_attention``,
  ``nn.MultiheadAttention``'s functional forward, the attention function a transformers
  module dispatches to (:mod:`attnprof.models.call_sites`; run unmarked inside), or, written
  out by hand, a matmul of two projected tensors (queries · keys), a softmax of its result
  and the matmul that applies that to the values. What the core returns carries its
  ``core`` mark.

Then an *output projection* is a module whose input carries the core's mark (and not an
output projection's: an MLP after it is not one); an *input projection* is one whose mark
reaches the core's query (``q_proj``), key (``k_proj``) or value (``v_proj``) argument, or
several of them (``qkv_proj``, fused); an attention module whose core's keys do not carry
its own input's mark reads another sequence: ``cross``. When the module found holds no
output projection but a module between it and its layer consumes its core's output (BERT's
and ViT's ``SelfOutput``), that module is where attention ends: it *holds* the found one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from attnprof.knowledge.model_parts import is_norm
from attnprof.models.call_sites import apply_patch, core_patches, modeling_modules, undo_patch

if TYPE_CHECKING:
    import torch

__all__ = ["Structure", "probe_structure"]

Mark = tuple[str, str]  # (kind, module path): ("in" | "proj" | "core" | "qk" | "scores", path)
Marks = frozenset[Mark]

_MATMULS = frozenset({"matmul", "__matmul__", "bmm", "einsum", "baddbmm"})
_SOFTMAXES = frozenset({"softmax", "_softmax", "_safe_softmax"})
_FUSED_CORES = frozenset({"scaled_dot_product_attention", "multi_head_attention_forward",
                          "_native_multi_head_attention"})
#: Keyword names a module's query input goes by when it is not passed positionally.
_QUERY_NAMES = ("hidden_states", "query", "x", "input", "inputs", "q")


@dataclass
class Structure:
    """What one forward showed: projection roles by submodule path, each attention module's
    kind, and the module that holds a found one (whose output projection is its)."""

    roles: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    holders: dict[str, str] = field(default_factory=dict)
    #: Attention modules (and holders) that ran in the probe: what the others are is unknown.
    ran: set[str] = field(default_factory=set)


@dataclass
class _Core:
    q: Marks
    k: Marks
    v: Marks


@dataclass
class _State:
    marks: Any  # torch.utils.weak.WeakIdKeyDictionary: tensor -> Marks
    attention: list[str] = field(default_factory=list)  # the attention modules running
    depth: int = 0  # scope modules running (attention modules and their holders)
    suspended: int = 0
    cores: dict[str, list[_Core]] = field(default_factory=dict)
    pending: dict[str, tuple[Marks, Marks]] = field(default_factory=dict)  # queries·keys
    outputs: dict[str, str] = field(default_factory=dict)  # output projection -> attention
    ran: set[str] = field(default_factory=set)

    def of(self, value: Any) -> Marks:
        """The union of the marks of every tensor in ``value`` (nested containers too)."""
        import torch
        from torch.utils._pytree import tree_leaves

        found: set[Mark] = set()
        for leaf in tree_leaves(value):
            if isinstance(leaf, torch.Tensor):
                found.update(self.marks.get(leaf, ()))
        return frozenset(found)

    def add(self, value: Any, marks: Marks) -> None:
        """Add ``marks`` to every tensor in ``value``."""
        import torch
        from torch.utils._pytree import tree_leaves

        if not marks:
            return
        for leaf in tree_leaves(value):
            if isinstance(leaf, torch.Tensor):
                self.marks[leaf] = self.marks.get(leaf, frozenset()) | marks

    def core(self, q: Marks, k: Marks, v: Marks) -> Marks:
        """Record a core call of the innermost running attention; the mark its output gets."""
        if not self.attention:
            return frozenset()
        path = self.attention[-1]
        self.cores.setdefault(path, []).append(_Core(q, k, v))
        return frozenset({("core", path)})


def _flow_mode(state: _State) -> Any:
    from torch.overrides import TorchFunctionMode

    class Flow(TorchFunctionMode):
        """Passes marks from a torch function's inputs to its outputs; spots the core."""

        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if state.suspended or not state.depth:
                return out
            name = getattr(func, "__name__", "")
            marks = state.of((args, kwargs))
            marks |= _core_marks(state, name, args, kwargs)
            state.add(out, marks)
            if (name.endswith("_") or name == "__setitem__") and args:
                state.add(args[0], marks)  # written in place
            return out

    return Flow()


def _core_marks(state: _State, name: str, args: Any, kwargs: Any) -> Marks:
    """Marks a core step adds to its output (see the module doc)."""
    import torch

    if not state.attention:
        return frozenset()
    path = state.attention[-1]
    if name in _FUSED_CORES:
        q, k, v = _qkv(args, kwargs)
        return state.core(state.of(q), state.of(k), state.of(v))
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if name in _SOFTMAXES and tensors and ("qk", path) in state.of(tensors[0]):
        return frozenset({("scores", path)})
    if name not in _MATMULS or len(tensors) < 2:
        return frozenset()
    a, b = (tensors[1], tensors[2]) if name == "baddbmm" and len(tensors) > 2 else tensors[:2]
    ma, mb = state.of(a), state.of(b)
    done = {("core", path), ("scores", path)}
    if done & (ma | mb) and ("core", path) not in ma | mb:  # probabilities · values
        values = mb if ("scores", path) in ma else ma
        q, k = state.pending.get(path, (frozenset(), frozenset()))
        return state.core(q, k, values)
    if done & (ma | mb) or not (_projected(ma) and _projected(mb)):
        return frozenset()
    state.pending.setdefault(path, (ma, mb))
    return frozenset({("qk", path)})


def _projected(marks: Marks) -> bool:
    return any(kind == "proj" for kind, _ in marks)


def _qkv(args: Any, kwargs: Any) -> tuple[Any, Any, Any]:
    """Query, key and value of a core call: ``(q, k, v, ...)``, or transformers' attention
    functions' ``(module, q, k, v, ...)``; by keyword when not positional."""
    import torch

    rest = list(args)
    if rest and isinstance(rest[0], torch.nn.Module):
        rest = rest[1:]
    rest += [None] * 3
    return (kwargs.get("query", rest[0]), kwargs.get("key", rest[1]),
            kwargs.get("value", rest[2]))


def _query_input(args: Any, kwargs: Any) -> Any:
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            return a
    for name in _QUERY_NAMES:
        if isinstance(kwargs.get(name), torch.Tensor):
            return kwargs[name]
    return next((v for v in kwargs.values() if isinstance(v, torch.Tensor)), None)


def _candidates(modules: dict[str, torch.nn.Module], scope: str) -> list[str]:
    """Modules inside ``scope`` that hold parameters of their own (a Linear, GPT-2's
    Conv1D, a LoRA part; not a container), not norms or embeddings: what can project."""
    import torch

    prefix = scope + "."
    return [p for p, m in modules.items() if p.startswith(prefix)
            and any(True for _ in m.parameters(recurse=False))
            and not isinstance(m, torch.nn.Embedding) and not is_norm(type(m).__name__)]


def probe_structure(modules: dict[str, torch.nn.Module], attention: list[str],
                    holders: dict[str, str], call: Callable[[], object]) -> Structure | None:
    """Run ``call`` (one forward of the model) with the attention modules at ``attention``
    (paths in ``modules``) watched, and read their structure; ``None`` when the forward
    raised (the caller then goes by names). ``holders``: module path -> the attention
    module directly inside it that it may hold (a parent below the layer)."""
    import torch
    from torch.utils.weak import WeakIdKeyDictionary

    state = _State(marks=WeakIdKeyDictionary())
    mode = _flow_mode(state)
    try:
        with _watched(modules, attention, holders, state, mode), torch.no_grad():
            call()
    except Exception:  # the real run reports the model's own error; here, go by names
        return None
    return _read(modules, attention, holders, state)


@contextlib.contextmanager
def _watched(modules: dict[str, torch.nn.Module], attention: list[str],
             holders: dict[str, str], state: _State, mode: Any) -> Iterator[None]:
    handles: list[Any] = []
    patches = core_patches(modeling_modules(modules[p] for p in attention))
    watched = {p: "attention" for p in attention}
    watched.update({h: "holder" for h in holders if h not in watched})
    candidates = {c for scope in watched for c in _candidates(modules, scope)} - set(watched)
    try:
        for path, what in watched.items():
            handles += _watch_scope(modules[path], path, what == "attention", state, mode)
        for path in candidates:
            handles += _watch_candidate(modules[path], path, state)
        for patch in patches:
            apply_patch(patch, lambda fn, _label: _core_call(fn, state))
        yield
    finally:
        for h in handles:
            h.remove()
        for patch in reversed(patches):
            undo_patch(patch)
        while state.depth:  # a forward that raised left its scopes open
            state.depth -= 1
            if not state.depth:
                mode.__exit__(None, None, None)


def _watch_scope(module: torch.nn.Module, path: str, is_attention: bool, state: _State,
                 mode: Any) -> list[Any]:
    def enter(_m: Any, args: Any, kwargs: Any) -> None:
        if not state.depth:
            mode.__enter__()
        state.depth += 1
        state.ran.add(path)
        if is_attention:
            state.attention.append(path)
            query = _query_input(args, kwargs)
            if query is not None:
                state.add(query, frozenset({("in", path)}))

    def leave(_m: Any, _args: Any, _kwargs: Any, _out: Any) -> None:
        if is_attention and state.attention:
            state.attention.pop()
        state.depth -= 1
        if not state.depth:
            mode.__exit__(None, None, None)

    return [module.register_forward_pre_hook(enter, with_kwargs=True),
            module.register_forward_hook(leave, with_kwargs=True, always_call=True)]


def _watch_candidate(module: torch.nn.Module, path: str, state: _State) -> list[Any]:
    seen: list[Marks] = []

    def enter(_m: Any, args: Any, kwargs: Any) -> None:
        marks = state.of((args, kwargs))
        seen.append(marks)
        for kind, owner in marks:
            downstream = any(k == "proj" and state.outputs.get(p) == owner for k, p in marks)
            if kind == "core" and not downstream:
                state.outputs.setdefault(path, owner)

    def leave(_m: Any, _args: Any, _kwargs: Any, out: Any) -> None:
        marks = seen.pop() if seen else frozenset()
        state.add(out, marks | {("proj", path)})

    return [module.register_forward_pre_hook(enter, with_kwargs=True),
            module.register_forward_hook(leave, with_kwargs=True, always_call=True)]


def _core_call(fn: Callable[..., Any], state: _State) -> Callable[..., Any]:
    """An attention function run unmarked inside, its output marked as the core's."""
    def probed(*args: Any, **kwargs: Any) -> Any:
        q, k, v = _qkv(args, kwargs)
        marks = state.of(q) | state.of(k) | state.of(v)
        core = state.core(state.of(q), state.of(k), state.of(v)) if state.depth else frozenset()
        state.suspended += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            state.suspended -= 1
        state.add(out, marks | core)
        return out

    return probed


def _read(modules: dict[str, torch.nn.Module], attention: list[str], holders: dict[str, str],
          state: _State) -> Structure:
    found = Structure(ran=set(state.ran))
    for path in attention:
        if path not in state.ran:
            continue
        mine = [o for o, owner in state.outputs.items() if owner == path]
        inside = [o for o in mine if o.startswith(path + ".")]
        holder = path.rpartition(".")[0]
        beside = [c for c in _candidates(modules, holder) if not c.startswith(path + ".")]
        # Taken as attention only when all it holds besides the module found (norms aside)
        # is that module's output projection: a block that also holds an MLP is no holder.
        if not inside and holder in holders and beside and set(beside) <= set(mine):
            found.holders[path] = holder
            inside = beside
        for o in inside:
            found.roles[o] = "o_proj"
        cores = state.cores.get(path, [])
        found.roles.update(_input_roles(cores, path, set(found.roles)))
        found.kinds[path] = _kind(cores, path)
    return found


def _input_roles(cores: list[_Core], path: str, taken: set[str]) -> dict[str, str]:
    """Each projection inside ``path`` whose mark reached the cores' queries, keys or values."""
    reached: dict[str, set[str]] = {}
    for core in cores:
        for which, marks in (("q", core.q), ("k", core.k), ("v", core.v)):
            for kind, source in marks:
                if kind == "proj" and source.startswith(path + ".") and source not in taken:
                    reached.setdefault(source, set()).add(which)
    return {source: (f"{next(iter(which))}_proj" if len(which) == 1 else "qkv_proj")
            for source, which in reached.items()}


def _kind(cores: list[_Core], path: str) -> str:
    """``cross`` when the queries carry the module's input and the keys do not."""
    own = ("in", path)
    if any(own in c.q and own not in c.k for c in cores):
        return "cross"
    return "self"
