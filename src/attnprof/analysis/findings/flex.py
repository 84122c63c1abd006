"""flex_attention that was not compiled: the unfused reference path.

Without ``torch.compile``, ``flex_attention`` runs a reference implementation op by op: it
computes the full ``Sq×Sk`` score matrix with ``matmul``, evaluates ``score_mod``/``mask_mod``
over all of it, and reduces it with ``logsumexp``/softmax, all in memory. Compiled, the same
call is one generated kernel (``triton_tem_fused_flex_attention`` on CUDA, a C++ kernel
inside ``## Call CompiledFxGraph`` on CPU) that skips masked blocks. In the trace the eager
path is the flex op (``FlexAttentionAutogradOp``) with ATen score ops inside it.
"""

from __future__ import annotations

import math
import re

import numpy as np

from attnprof.analysis.findings.context import FindingContext, bytes_text, us_text
from attnprof.analysis.index.tensor_args import tensor_args
from attnprof.formatting import counted
from attnprof.record.trace_report import Finding

__all__ = ["detect_uncompiled_flex"]

_SCORE_OPS = frozenset({
    "aten::matmul", "aten::bmm", "aten::_softmax", "aten::_safe_softmax", "aten::logsumexp",
    "aten::softmax",
})  # fmt: skip


_FLEX = re.compile("FlexAttention|flex_attention")


def _is_flex(name: str) -> bool:
    return _FLEX.search(name) is not None


def detect_uncompiled_flex(ctx: FindingContext) -> list[Finding]:
    """A flex_attention op that computed its scores with eager ATen ops."""
    findings = []
    names = ctx.ops.names
    strings = ctx.ops.trace.events.strings
    flex_ids = [i for i, name in enumerate(strings.values) if _is_flex(name)]
    for region, view in ctx.regions():
        flex = [i for i in ctx.ops_with_name_ids(view, flex_ids)
                if not ctx.under_matching(i, _FLEX)]
        eager = [(i, [j for j in ctx.subtree(i) if names[j] in _SCORE_OPS]) for i in flex]
        eager = [(i, inner) for i, inner in eager if inner]
        if not eager:
            continue
        n = view.n
        inner = [j for _, js in eager for j in js]
        spent = math.fsum(float(ctx.ops.dur[i]) for i, _ in eager) / n
        kinds = sorted({names[j] for j in inner})
        biggest = max((a for j in inner for a in tensor_args(ctx.ops, j)),
                      key=lambda a: a.numel, default=None)
        evidence = [
            f"{names[eager[0][0]]} ran eagerly: {', '.join(kinds)} inside it "
            f"({len(inner) / n:g} score ops per forward, {us_text(spent)} per forward)",
        ]
        if biggest is not None:
            evidence.append(f"largest tensor it computed on: {list(biggest.dims)} "
                            f"{biggest.dtype} ({bytes_text(biggest.nbytes)})")
        leaves = {j for part in view.compute_of for j in part.tolist()} if not view.on_device \
            else set()
        kernels = [d for i, _ in eager for d in ctx.devices_under(i).tolist()]
        if kernels:
            evidence.append(f"{counted(len(kernels) / n, 'kernel')} per forward instead of one "
                            f"fused flex kernel ({us_text(ctx.device_us(np.array(kernels)) / n)})")
        elif leaves:
            count = sum(1 for i, _ in eager for j in ctx.subtree(i) if j in leaves)
            evidence.append(f"{count / n:g} compute ops per forward instead of one fused kernel")
        findings.append(Finding(
            rule="flex-uncompiled", severity="critical", region=region.name,
            title="flex_attention is not compiled: it materialises the full score matrix",
            evidence=evidence,
            fix=("compile it once and reuse it: flex_attention = torch.compile(flex_attention); "
                 "the compiled call is one fused kernel that never materialises Sq×Sk"),
            data={"per_forward": len(eager) / n, "score_ops_per_forward": len(inner) / n,
                  "us_per_forward": spent,
                  "largest_tensor_bytes": biggest.nbytes if biggest is not None else None},
        ))
    return findings
