"""A full ``B·H·Sq·Sk`` score tensor materialised in memory.

Unfused attention writes the scores ``q·kᵀ`` to memory (and masks, softmaxes and reads
them back), so its memory grows with ``Sq·Sk``; fused kernels keep score tiles on chip and
grow linearly. Evidence, strongest first: with the workload known, an allocation of at
least ``B·H·Sq·Sk`` elements inside the forward, or an op reading a ``(.., Sq, Sk)`` tensor
of that size (a softmax or masked_fill over the scores); without it (a foreign trace), a
``q·kᵀ`` product ``[.., Sq, D] × [.., D, Sk]`` whose ``(.., Sq, Sk)`` result a softmax then
reads.
"""

from __future__ import annotations

from attnprof.analysis.findings.context import SCORE_PRODUCTS, FindingContext, bytes_text
from attnprof.analysis.index.tensor_args import TensorArg, tensor_args
from attnprof.analysis.index.views import RegionView
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.knowledge.sdpa_backends import BACKEND_OPS
from attnprof.record.trace_report import Finding, RegionReport

__all__ = ["detect_materialised_scores"]

_SOFTMAX = frozenset({"aten::softmax", "aten::_softmax", "aten::_safe_softmax",
                      "aten::logsumexp"})
_SCORE_READERS = _SOFTMAX | {"aten::masked_fill", "aten::masked_fill_"}
_CRITICAL_BYTES = 1 << 30


def detect_materialised_scores(ctx: FindingContext) -> list[Finding]:
    """Score tensors of ``B·H·Sq·Sk`` elements in memory (see the module doc)."""
    findings = []
    for region, view in ctx.regions():
        if ctx.workload is not None:
            found = _with_workload(ctx, region, view)
        else:
            found = _from_shapes(ctx, view)
        if found is not None:
            evidence, size = found
            findings.append(Finding(
                rule="scores-materialised",
                severity="critical" if size >= _CRITICAL_BYTES else "warning",
                region=region.name,
                title="the full Sq×Sk score matrix is materialised",
                evidence=evidence,
                fix=("use a fused kernel that keeps score tiles on chip: SDPA flash, "
                     "memory-efficient or cuDNN, or compiled flex_attention; memory then grows "
                     "linearly with sequence length instead of quadratically"),
                data={"bytes": size},
            ))
    return findings


def _with_workload(ctx: FindingContext, region: RegionReport, view: RegionView
                   ) -> tuple[list[str], int] | None:
    workload = ctx.workload
    assert workload is not None
    q, k = workload.q_len, workload.k_len
    scores = workload.batch * workload.heads * q * k
    if q * k <= 1:
        return None
    evidence: list[str] = []
    size = 0
    names = ctx.ops.names
    readers: dict[TensorArg, list[str]] = {}
    # Only ops that read nothing but scores: a q or k of shape (.., S, D) with D == S would
    # look the same to a matmul.
    for i in ctx.ops_named(view, _SCORE_READERS):
        for arg in tensor_args(ctx.ops, i)[:1]:
            if len(arg.dims) >= 3 and arg.dims[-2:] == (q, k) and arg.numel >= scores:
                size = max(size, arg.nbytes or 0)
                seen = readers.setdefault(arg, [])
                if names[i] not in seen:
                    seen.append(names[i])
    for arg, by in readers.items():
        evidence.append(f"{list(arg.dims)} {arg.dtype} scores ({bytes_text(arg.nbytes)}, "
                        f"B·H·Sq·Sk) read by {', '.join(by)}")
    alloc = region.largest_allocation_bytes
    # The allocation alone proves nothing when a fused attention op made it (its scratch
    # buffers scale with the tile, not with Sq·Sk) or when head_dim >= Sk, where a
    # q/k/v-sized buffer is as large as the scores.
    fused = _is_fused_attention(region.largest_allocation_op)
    if (alloc is not None and alloc >= scores * workload.element_bytes and not fused
            and (evidence or workload.head_dim < k)):
        size = max(size, alloc)
        evidence.insert(0, f"largest allocation in the forward: {bytes_text(alloc)} by "
                           f"{region.largest_allocation_op or 'an unknown op'} "
                           f"(B·H·Sq·Sk = {scores} elements)")
    return (evidence, size) if evidence else None


def _is_fused_attention(op: str | None) -> bool:
    fused = {name for name, label in BACKEND_OPS if label != "math"}
    return op is not None and (op in fused or decode_kernel_name(op).is_attention)


def _from_shapes(ctx: FindingContext, view: RegionView) -> tuple[list[str], int] | None:
    names = ctx.ops.names
    products: dict[tuple[int, int], tuple[int, list[int]]] = {}
    for i in ctx.ops_named(view, SCORE_PRODUCTS):
        args = tensor_args(ctx.ops, i)
        if len(args) >= 2 and _is_qk(args[0], args[1]):
            key = (args[0].dims[-2], args[1].dims[-1])
            products.setdefault(key, (i, [*args[0].dims[:-1], args[1].dims[-1]]))
    for i in ctx.ops_named(view, _SOFTMAX):
        args = tensor_args(ctx.ops, i)
        if not args or len(args[0].dims) < 3:
            continue
        key = (args[0].dims[-2], args[0].dims[-1])
        if key in products:
            op, shape = products[key]
            arg = args[0]
            return ([f"{names[op]} computes q·kᵀ {shape} and {names[i]} reads it: "
                     f"{list(arg.dims)} {arg.dtype} ({bytes_text(arg.nbytes)}) per call"],
                    arg.nbytes or 0)
    return None


def _is_qk(a: TensorArg, b: TensorArg) -> bool:
    # [.., Sq, D] @ [.., D, Sk] with a head dim that is small next to the lengths.
    return (len(a.dims) >= 3 and len(b.dims) == len(a.dims) and a.dims[-1] == b.dims[-2]
            and a.dims[-1] <= 512 and a.dims[-2] > 1 and b.dims[-1] > 1)
