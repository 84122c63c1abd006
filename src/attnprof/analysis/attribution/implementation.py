"""What attention implementation actually ran in a layer, read from its core's ops, and
whether it is the one asked for.

The core label names the attention function the module dispatched to (``sdpa``,
``eager``, ``flex_attention``, or ``F.scaled_dot_product_attention`` for code that calls
SDPA itself); the ops under it say what that function did: which SDPA backend ran, whether
flex_attention was compiled. A requested ``sdpa`` that ends in SDPA's math backend, or a
``flex_attention`` that ran eagerly, is the kind of silent fallback a user never sees
without a trace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from attnprof.knowledge.sdpa_backends import sdpa_backend
from attnprof.record.finding import Finding

__all__ = ["actual_implementation", "implementation_findings", "layer_list", "matches_request",
           "requested_of"]

_FLEX = re.compile(r"flex_attention|FlexAttention", re.IGNORECASE)
_COMPILED = re.compile(r"CompiledFxGraph|Torch-Compiled Region|CompiledFunction")
#: What each requested implementation should show: a test on the ``actual`` text.
_EXPECTED: dict[str, re.Pattern[str]] = {
    "eager": re.compile(r"^eager"),
    "sdpa": re.compile(r"^sdpa \((?!math)"),
    "sdpa-math": re.compile(r"^sdpa \(math\)"),
    "sdpa-flash": re.compile(r"^sdpa \(flash"),
    "sdpa-efficient": re.compile(r"^sdpa \(memory-efficient\)"),
    "sdpa-cudnn": re.compile(r"^sdpa \(cuDNN\)"),
    "flex_attention": re.compile(r"^flex_attention \(compiled\)"),
}


def requested_of(region: str) -> str | None:
    """The implementation a model step region asked for (``attnprof::model/sdpa/prefill``
    -> ``sdpa``), else ``None``."""
    parts = region.split("/")
    return parts[1] if len(parts) == 3 and parts[0].endswith("model") else None


def actual_implementation(dispatched: Iterable[str], op_names: Iterable[str],
                          inferred: bool) -> str | None:
    """``sdpa (flash (CPU))``, ``flex_attention (uncompiled)``, ``eager`` ... from the core
    labels' names (``dispatched``) and the ops that ran under them."""
    names = list(op_names)
    backend = sdpa_backend(names)
    if backend:
        return f"sdpa ({backend})"
    if any(_FLEX.search(n) for n in names) or "flex_attention" in dispatched:
        compiled = any(_COMPILED.search(n) for n in names)
        return f"flex_attention ({'compiled' if compiled else 'uncompiled'})"
    if inferred:
        return "eager (hand-written)" if names else None
    labels = [d for d in dispatched if d]
    return "eager" if not labels or labels[0] == "eager" else labels[0]


def matches_request(requested: str | None, actual: str | None) -> bool | None:
    """Whether ``actual`` is what ``requested`` should run (``None``: nothing to check)."""
    if requested is None or actual is None or requested not in _EXPECTED:
        return None
    return bool(_EXPECTED[requested].search(actual))


def implementation_findings(requested: str | None,
                            actual_by_layer: list[tuple[str, str | None]]) -> list[Finding]:
    """One finding per distinct (requested, actual) mismatch, naming the layers."""
    if requested is None or requested not in _EXPECTED:
        return []
    groups: dict[str, list[str]] = {}
    for layer, actual in actual_by_layer:
        if matches_request(requested, actual) is False and actual is not None:
            groups.setdefault(actual, []).append(layer)
    out = []
    for actual, layers in groups.items():
        out.append(Finding(
            rule="attention-fallback", severity="warning",
            title=f"{requested} was requested but {actual} ran",
            evidence=[f"requested {requested}; the trace's attention core ran {actual}",
                      f"in {len(layers)} layer(s): {layer_list(layers)}"],
            fix=_fix(requested, actual), data={"layers": layers, "requested": requested,
                                               "actual": actual}))
    return out


def _fix(requested: str, actual: str) -> str:
    if "math" in actual:
        return ("SDPA chose its math backend (a float mask, an unsupported head dim or "
                "dtype, or output_attentions): pass is_causal instead of a mask, use a "
                "supported dtype/head dim, or pin a backend to see why it is refused")
    if "uncompiled" in actual:
        return "compile flex_attention (transformers compiles it unless disabled)"
    return (f"check what sends attention down {actual}: output_attentions=True, a "
            "head mask, or an implementation the model does not support")


def layer_list(layers: list[str], keep: int = 6) -> str:
    """The first ``keep`` layer names, and how many more: "0, 1, 2 and 29 more"."""
    shown = ", ".join(layers[:keep])
    return shown + (f" and {len(layers) - keep} more" if len(layers) > keep else "")
