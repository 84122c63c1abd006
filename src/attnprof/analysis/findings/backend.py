"""Which SDPA backend ran, whether it was the one expected, and GQA that fell back to math.

``F.scaled_dot_product_attention`` routes to a backend op whose name says which one ran;
the code never does. When the variant named a backend (``sdpa-flash`` pins flash) and
another ran, that mismatch is the finding. When PyTorch's router skipped the fused
backends, its reasons exist only as warnings, which the run record keeps: they become the
evidence. With ``enable_gqa=True``, backends without native GQA fall back to the math path,
which expands K/V with ``repeat_interleave`` before the unfused computation.
"""

from __future__ import annotations

import math

import numpy as np

from attnprof.analysis.findings.context import FindingContext, bytes_text, us_text
from attnprof.analysis.index.tensor_args import tensor_args
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.knowledge.sdpa_backends import BACKEND_OPS, router_reasons
from attnprof.record.trace_report import Finding

__all__ = ["EXPECTED_BACKENDS", "detect_gqa_math_fallback", "report_sdpa_backend"]

#: Variant -> backend labels it should run (``sdpa_backend`` vocabulary).
EXPECTED_BACKENDS: dict[str, frozenset[str]] = {
    "sdpa-math": frozenset({"math"}),
    "sdpa-flash": frozenset({"flash", "flash (CPU)"}),
    "sdpa-efficient": frozenset({"memory-efficient"}),
    "sdpa-cudnn": frozenset({"cuDNN"}),
}
_SDPA = "aten::scaled_dot_product_attention"
_BACKEND_OP = {label: op for op, label in BACKEND_OPS}
_MATH = "aten::_scaled_dot_product_attention_math"


def report_sdpa_backend(ctx: FindingContext) -> list[Finding]:
    """Say which backend ran; warn when it is not the one the variant pinned or expected."""
    findings = []
    names = ctx.ops.names
    for region, view in ctx.regions():
        ran = region.sdpa_backend
        if ran is None:
            continue
        op = _BACKEND_OP[ran]
        calls = ctx.ops_named(view, {op})
        evidence = [f"{_SDPA} → {op}: {len(calls) / view.n:g} per forward"]
        kernels = [d for i in calls for d in ctx.devices_under(i).tolist()]
        if kernels:
            pos = np.array(kernels)
            shorts = [decode_kernel_name(n).short for n in ctx.device_names(pos)]
            evidence.append(f"{len(kernels) / view.n:g} kernel(s) per forward under it: "
                            f"{', '.join(shorts)}")
        elif not view.on_device and calls:
            leaves = {j for part in view.compute_of for j in part.tolist()}
            if all(i in leaves for i in calls):
                evidence.append(f"one fused op per call: {op} did all the work itself")
            else:
                inner = sorted({names[j] for i in calls for j in ctx.subtree(i) if j in leaves})
                evidence.append(f"unfused: {len(inner)} kinds of compute op under it "
                                f"({', '.join(inner)})")
        variant = ctx.variant(region)
        expected = EXPECTED_BACKENDS.get(variant or "")
        warnings = _router_warnings(ctx.result)
        if expected is not None and ran not in expected:
            findings.append(Finding(
                rule="sdpa-backend", severity="warning", region=region.name,
                title=f"{variant} expected {' or '.join(sorted(expected))}, but {ran} ran",
                evidence=evidence + warnings,
                fix="check the backend's constraints (dtype, head dim, mask, device) in the "
                    "warnings above, or pin it with torch.nn.attention.sdpa_kernel",
                data={"backend": ran, "expected": sorted(expected), "variant": variant}))
        elif ran == "math" and variant != "sdpa-math":
            findings.append(Finding(
                rule="sdpa-backend", severity="warning", region=region.name,
                title="SDPA fell back to the math backend",
                evidence=evidence + (warnings or ["no fused backend accepted these inputs; "
                                                  "the refusals are only in PyTorch's warnings"]),
                fix="make the inputs fit a fused backend (16-bit on CUDA, head_dim <= 256, "
                    "no arbitrary attn_mask; or is_causal=True) or pin one with sdpa_kernel "
                    "to see its refusal",
                data={"backend": ran, "variant": variant}))
        else:
            findings.append(Finding(
                rule="sdpa-backend", severity="info", region=region.name,
                title=f"SDPA ran the {ran} backend",
                evidence=evidence,
                fix="nothing to fix; pin another backend with torch.nn.attention.sdpa_kernel "
                    "to compare",
                data={"backend": ran, "variant": variant}))
    return findings


def _router_warnings(result: object) -> list[str]:
    said = list(getattr(result, "warnings", None) or [])
    return [f"PyTorch: {line}" for line in router_reasons(said)]


def detect_gqa_math_fallback(ctx: FindingContext) -> list[Finding]:
    """SDPA called with fewer K/V heads than query heads that ran on the math path."""
    findings = []
    names = ctx.ops.names
    for region, view in ctx.regions():
        calls = [i for i in ctx.ops_named(view, {_SDPA}) if _is_grouped(ctx, i)]
        maths = [j for i in calls for j in ctx.subtree(i) if names[j] == _MATH]
        if not maths:
            continue
        repeats = [j for m in maths for j in ctx.ops.children(m)
                   if names[j] == "aten::repeat_interleave"]
        args = tensor_args(ctx.ops, calls[0])
        evidence = [f"{_SDPA} q {list(args[0].dims)} with k {list(args[1].dims)} "
                    f"(enable_gqa) → {_MATH}"]
        if repeats:
            size = sum((a[0].nbytes or 0) for j in repeats if (a := tensor_args(ctx.ops, j)))
            groups = args[0].dims[-3] // max(args[1].dims[-3], 1)
            spent = math.fsum(float(ctx.ops.dur[j]) for j in repeats) / view.n
            evidence.append(f"aten::repeat_interleave ×{len(repeats) / view.n:g} per forward "
                            f"copies K/V {groups}× ({bytes_text(groups * size / view.n)} "
                            f"written, {us_text(spent)} per forward)")
        pinned = ctx.variant(region) == "sdpa-math"
        findings.append(Finding(
            rule="gqa-math-fallback", severity="info" if pinned else "warning",
            region=region.name,
            title="grouped-query attention ran on the math path"
            + (" (pinned)" if pinned else ", not a fused kernel"),
            evidence=evidence,
            fix=("use a backend with native GQA (flash on CUDA and CPU, cuDNN) — keep "
                 "enable_gqa=True and make the inputs fit it — or compile flex_attention "
                 "with enable_gqa=True"),
            data={"per_forward": len(maths) / view.n, "repeats_per_forward": len(repeats) / view.n},
        ))
    return findings


def _is_grouped(ctx: FindingContext, i: int) -> bool:
    args = tensor_args(ctx.ops, i)
    return (len(args) >= 2 and len(args[0].dims) >= 3 and len(args[1].dims) >= 3
            and args[0].dims[-3] != args[1].dims[-3])
