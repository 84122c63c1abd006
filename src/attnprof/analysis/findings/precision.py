"""Precision paths: 16-bit inputs computed in fp32, and the safe-softmax reference path.

The math SDPA backend is the careful reference: it upcasts bf16/fp16 inputs to fp32, so its
GEMMs run as fp32 (``sgemm``/SIMT kernels, or ``aten::bmm`` on ``float`` tensors) instead of
on tensor cores, and it uses ``aten::_safe_softmax``, which makes extra passes so that a fully
masked row gives 0 instead of NaN.
"""

from __future__ import annotations

import math

import numpy as np

from attnprof.analysis.findings.context import FindingContext, us_text
from attnprof.analysis.index.tensor_args import HALF_TYPES, tensor_args
from attnprof.analysis.index.views import RegionView
from attnprof.formatting import counted
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.trace_report import Finding

__all__ = ["detect_fp32_upcast", "detect_safe_softmax"]

_GEMMS = frozenset({"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::matmul"})
_CASTS = frozenset({"aten::copy_"})
_HALF_WORKLOAD = {"bfloat16": "c10::BFloat16", "float16": "c10::Half"}


def _half_inputs(ctx: FindingContext, view: RegionView) -> str | None:
    """The 16-bit type the region's inputs have, from the workload or the recorded types."""
    workload = ctx.workload
    if workload is not None:
        return _HALF_WORKLOAD.get(workload.dtype)
    names = ctx.ops.names
    pos = view.op_positions
    for i in pos[ctx.ops.parent[pos] == view.instance_root(0)].tolist():
        if names[i].startswith("aten::empty"):
            continue
        for arg in tensor_args(ctx.ops, i):
            if len(arg.dims) >= 3:
                return arg.dtype if arg.dtype in HALF_TYPES else None
    return None


def detect_fp32_upcast(ctx: FindingContext) -> list[Finding]:
    """16-bit inputs whose attention GEMMs ran in fp32 (casts to float, fp32/SIMT GEMMs)."""
    findings = []
    names = ctx.ops.names
    for region, view in ctx.regions():
        half = _half_inputs(ctx, view)
        if half is None:
            continue
        evidence = []
        casts = [i for i in ctx.ops_named(view, _CASTS) if _upcasts(ctx, i)]
        if casts:
            arg = tensor_args(ctx.ops, casts[0])[1]
            parents = sorted({names[p] for i in casts for p in ctx.ops.ancestors(i)
                              if names[p] in ("aten::to", "aten::_to_copy")} or {"aten::copy_"})
            evidence.append(f"{' / '.join(parents)}: {half} {list(arg.dims)} → float, "
                            f"{len(casts) / view.n:g} per forward")
        gemms = [i for i in ctx.ops_named(view, _GEMMS)
                 if (args := tensor_args(ctx.ops, i)) and all(a.dtype == "float" for a in args)]
        if gemms:
            spent = math.fsum(float(ctx.ops.dur[i]) for i in gemms) / view.n
            evidence.append(f"fp32 GEMMs on 16-bit inputs: "
                            f"{', '.join(sorted({names[i] for i in gemms}))} on float tensors, "
                            f"{len(gemms) / view.n:g} per forward ({us_text(spent)} per forward)")
        # Only a dtype the kernel's name states: an fp32 launching op says nothing about
        # whether the GEMM ran on tensor cores (TF32) or not.
        simt = [k for k in region.kernels if k.family == "gemm"
                and (k.tensor_cores is False
                     or (k.dtype in ("fp32", "tf32") and k.dtype_source == "name"))]
        if simt:
            evidence.append("non-tensor-core GEMM kernels: " + ", ".join(
                f"{k.short} ×{k.per_forward:g}" for k in simt))
        if evidence:
            findings.append(Finding(
                rule="fp32-upcast", severity="warning", region=region.name,
                title=f"{half.removeprefix('c10::')} inputs computed in fp32",
                evidence=evidence,
                fix=("keep attention in 16-bit on tensor cores: use a fused SDPA backend "
                     "(flash, memory-efficient, cuDNN) which accumulates in fp32 without "
                     "upcasting the inputs; the math backend upcasts by design"),
                data={"input_dtype": half, "casts_per_forward": len(casts) / view.n,
                      "fp32_gemms_per_forward": len(gemms) / view.n,
                      "simt_kernels": [k.name for k in simt]},
            ))
    return findings


def _upcasts(ctx: FindingContext, i: int) -> bool:
    # copy_(dst, src): a float destination filled from a 16-bit source.
    args = tensor_args(ctx.ops, i)
    return len(args) >= 2 and args[0].dtype == "float" and args[1].dtype in HALF_TYPES


def detect_safe_softmax(ctx: FindingContext) -> list[Finding]:
    """``aten::_safe_softmax``: the reference softmax with extra passes for fully masked rows."""
    findings = []
    names = ctx.ops.names
    for region, view in ctx.regions():
        hits = ctx.ops_named(view, {"aten::_safe_softmax"})
        if not hits:
            continue
        extra = [j for i in hits for j in ctx.ops.children(i) if names[j] != "aten::softmax"]
        total = math.fsum(float(ctx.ops.dur[i]) for i in hits) / view.n
        overhead = math.fsum(float(ctx.ops.dur[j]) for j in extra) / view.n
        parts = sorted({names[j] for j in extra})
        evidence = [f"aten::_safe_softmax ×{len(hits) / view.n:g} per forward "
                    f"({us_text(total)}), of which {us_text(overhead)} in "
                    f"{', '.join(parts) or 'its checks'} on top of the softmax itself"]
        kernels = [d for i in hits for d in ctx.devices_under(i).tolist()]
        if kernels:
            shorts = [decode_kernel_name(n).short for n in ctx.device_names(np.array(kernels))]
            evidence.append(f"{counted(len(kernels) / view.n, 'kernel')} per forward instead "
                            f"of one ({', '.join(shorts)})")
        findings.append(Finding(
            rule="safe-softmax", severity="info", region=region.name,
            title="softmax runs the safe (reference) path",
            evidence=evidence,
            fix=_safe_softmax_fix(ctx, hits),
            data={"per_forward": len(hits) / view.n, "us_per_forward": total,
                  "overhead_us_per_forward": overhead},
        ))
    return findings


def _safe_softmax_fix(ctx: FindingContext, hits: list[int]) -> str:
    """The fix depends on who called the safe path: SDPA math, eager flex, or user code."""
    if any(ctx.under(i, "FlexAttention") or ctx.under(i, "flex_attention") for i in hits):
        return ("flex_attention ran eagerly, through the reference softmax: compile it "
                "(torch.compile(flex_attention)) so the softmax is fused into one kernel")
    if any(ctx.under(i, "_scaled_dot_product_attention_math") for i in hits):
        return ("expected of the math backend (fully masked rows give 0, not NaN); a fused "
                "backend (flash, memory-efficient, cuDNN) handles this inside its kernel")
    return ("if every row keeps at least one key (causal or padding masks usually do), call "
            "torch.softmax directly, or use F.scaled_dot_product_attention with a fused backend")
