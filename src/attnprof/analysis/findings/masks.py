"""A mask built inside every forward instead of once.

A causal or sliding-window mask depends only on the sequence lengths, yet it is often
rebuilt on every call: ``torch.ones(S, S).tril()`` in hand-written attention, the math SDPA
backend with ``is_causal=True`` (``aten::ones`` → ``tril`` → ``where`` each call), or
flex_attention's eager path evaluating ``mask_mod`` over the full grid (``arange`` + ``le``).
Seen in the trace as mask-building ops inside the region, once per forward.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from attnprof.analysis.findings.context import FindingContext, us_text
from attnprof.formatting import counted
from attnprof.record.trace_report import Finding

__all__ = ["detect_mask_rebuild"]

# Ops that create a mask from nothing but sizes; tril/triu are unambiguous on their own.
_TRIANGLE = frozenset({"aten::tril", "aten::triu", "aten::tril_", "aten::triu_"})
_FILL = frozenset({"aten::ones", "aten::ones_like", "aten::full", "aten::full_like"})
_INDEX = frozenset({"aten::arange"})
_COMPARE = frozenset({"aten::le", "aten::lt", "aten::ge", "aten::gt"})
_SELECT = frozenset({"aten::where"})
_BUILDERS = _TRIANGLE | _FILL | _INDEX | _COMPARE | _SELECT


def detect_mask_rebuild(ctx: FindingContext) -> list[Finding]:
    """Mask-building ops (tril/triu, or arange + comparisons) in every forward."""
    findings = []
    names = ctx.ops.names
    for region, view in ctx.regions():
        found = [i for i in ctx.ops_named(view, _BUILDERS)
                 # Count each op once, at its outermost call (arange calls arange.out), and
                 # leave safe-softmax's own where to the safe-softmax rule.
                 if (ctx.ops.parent[i] < 0 or names[int(ctx.ops.parent[i])] != names[i])
                 and not ctx.under(i, "_safe_softmax")]
        kinds = {names[i] for i in found}
        builds = bool(kinds & _TRIANGLE) or bool(kinds & _INDEX and kinds & _COMPARE)
        if not builds:
            continue
        # Each forward must build it, or it is a one-off (e.g. a cache filled on first use).
        if view.instance_counts(found).min() == 0:
            continue
        findings.append(_finding(ctx, region.name, view.n, found))
    return findings


def _finding(ctx: FindingContext, region: str, n: int, found: list[int]) -> Finding:
    names = ctx.ops.names
    counts = Counter(names[i] for i in found)
    spent = math.fsum(float(ctx.ops.dur[i]) for i in found) / n
    listing = ", ".join(f"{name} ×{c / n:g}" for name, c in counts.items())
    evidence = [f"per forward: {listing} ({us_text(spent)} per forward)"]
    inside_math = any(ctx.under(i, "_scaled_dot_product_attention_math") for i in found)
    inside_flex = any(ctx.under(i, "FlexAttention") or ctx.under(i, "flex_attention")
                      for i in found)
    if inside_math:
        evidence.append("built inside aten::_scaled_dot_product_attention_math: the math "
                        "backend materialises the causal mask on every call")
        fix = ("use a fused SDPA backend (flash, memory-efficient or cuDNN with is_causal=True) "
               "that applies causality inside the kernel")
    elif inside_flex:
        evidence.append("built inside flex_attention's eager path: mask_mod is evaluated over "
                        "the whole Sq×Sk grid on every call")
        fix = "compile flex_attention (torch.compile) so mask_mod is fused into the kernel"
    else:
        fix = ("build the mask once, outside the forward (at init, or cache it per sequence "
               "length), or pass is_causal=True to SDPA instead of a mask")
    device = [d for i in found for d in ctx.devices_under(i).tolist()]
    if device:
        pos = np.array(device)
        evidence.append(f"{counted(len(device) / n, 'kernel')} per forward building it "
                        f"({us_text(ctx.device_us(pos) / n)} per forward)")
    return Finding(
        rule="mask-rebuilt", severity="warning", region=region,
        title="the attention mask is rebuilt inside every forward",
        evidence=evidence, fix=fix,
        data={"ops": dict(counts), "per_forward": len(found) / n, "cpu_us_per_forward": spent,
              "kernels_per_forward": len(device) / n},
    )
