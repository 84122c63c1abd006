"""Full copies inside the forward, by what forced them: an out-of-place op, K/V expanded by
repeat, or a layout change.

``scores.masked_fill(mask, -inf)`` reads like one step, but ATen implements it as
``clone`` + ``masked_fill_``: a full extra copy of the scores (an ``aten::copy_`` on CPU, a
copy kernel or ``Memcpy DtoD`` on CUDA). ``repeat_kv`` in GQA ports
(``k.repeat_interleave(groups, dim=1)``, or ``expand`` + ``reshape``) writes every shared K/V
head ``groups`` times. And layouts force copies: ``.contiguous()`` or ``.clone()`` of a
transposed q, k, v or output, a ``reshape`` of a tensor no view can express (a transposed
``[B, S, H, D]`` to ``[B, S, H·D]``), a matmul folding a transposed input. All are visible
only in the op tree: each ``aten::copy_`` is classified once, by the ops above it, so a copy
is reported by exactly one rule (library-internal copies, inside SDPA or flex_attention, and
dtype casts, the precision rule's, by none of these).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from attnprof.analysis.findings.attention_tensors import AttentionTensors, attention_tensors
from attnprof.analysis.findings.context import (
    LIBRARY_ATTENTION,
    FindingContext,
    bytes_text,
    us_text,
)
from attnprof.analysis.index.pairs import distinct, is_in
from attnprof.analysis.index.tensor_args import tensor_args
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.record.trace_report import PATH_SEP, Finding
from attnprof.workload.problem import Workload

__all__ = ["detect_hidden_copies", "detect_kv_expansion", "detect_layout_copies"]

_COPIES = frozenset({"aten::clone", "aten::copy_"})
# Ops whose whole job is to copy, or to expand K/V (reported by detect_kv_expansion).
_NOT_HIDDEN = frozenset({
    "aten::clone", "aten::copy_", "aten::contiguous", "aten::to", "aten::_to_copy",
    "aten::repeat_interleave", "aten::repeat", "aten::reshape", "aten::flatten",
})  # fmt: skip
_REPEATS = frozenset({"aten::repeat_interleave", "aten::repeat", "aten::reshape", "aten::flatten"})
_ANY_REPEAT = re.compile("^(?:" + "|".join(re.escape(n) for n in sorted(_REPEATS)) + ")$")
# Ops that copy only because a layout cannot be viewed (reshape, flatten) or on request.
_LAYOUT_CAUSES = frozenset({
    "aten::contiguous", "aten::clone", "aten::reshape", "aten::flatten", "aten::unflatten",
    "aten::ravel", "aten::_reshape_copy",
})  # fmt: skip
# ``out[idx] = x`` records the view it writes into, then the copy_.
_SETITEM_VIEWS = frozenset({"aten::select", "aten::slice", "aten::narrow", "aten::index",
                            "aten::as_strided"})
# Copies that are casts (the precision rule's) or repeats (the K/V rule's), not layouts.
_NOT_LAYOUT = frozenset({"aten::to", "aten::_to_copy", "aten::type_as",
                         "aten::repeat_interleave", "aten::repeat"})


def _copies_in(ctx: FindingContext, i: int) -> list[int]:
    """The ``copy_`` ops that write real tensors inside op ``i``'s subtree."""
    names = ctx.ops.names
    return [j for j in ctx.subtree(i) if names[j] == "aten::copy_" and tensor_args(ctx.ops, j)]


def _copied_bytes(ctx: FindingContext, copy_op: int) -> int | None:
    args = tensor_args(ctx.ops, copy_op)
    return args[0].nbytes if args else None


def detect_hidden_copies(ctx: FindingContext) -> list[Finding]:
    """Out-of-place ops (``masked_fill``, ``index_put``, ...) implemented as clone + in-place op."""
    findings = []
    ops = ctx.ops
    names = ops.names
    strings = ops.trace.events.strings
    # Only an op whose in-place twin ("<name>_") the trace has at all can be one.
    twins = {sid: twin for sid, name in enumerate(strings.values)
             if name.startswith("aten::") and not name.endswith("_") and name not in _NOT_HIDDEN
             and (twin := strings.id_of(f"{name}_")) >= 0}
    copy_ids = [i for i in (strings.id_of(c) for c in _COPIES) if i >= 0]
    for region, view in ctx.regions():
        hits: dict[str, list[int]] = defaultdict(list)
        found = np.array(ctx.ops_with_name_ids(view, list(twins)), dtype=np.int64)
        if len(found):
            # A subtree is a position range: counts of copies and of each twin up to every
            # position say at once which candidates hold both.
            stop = ops.last[found] + 1
            copies = _running_count(is_in(ops.name, copy_ids))
            keep = copies[stop] - copies[found] > 0
            twin_of = np.array([twins[n] for n in ops.name[found].tolist()], dtype=np.int64)
            for twin in distinct(twin_of[keep]).tolist():
                mine = keep & (twin_of == twin)
                twins_seen = _running_count(ops.name == twin)
                keep[mine] = twins_seen[stop[mine]] - twins_seen[found[mine]] > 0
            for i in found[keep].tolist():
                if _copies_in(ctx, i):
                    hits[names[i]].append(i)
        for name, positions in hits.items():
            findings.append(_hidden_copy(ctx, region.name, view.n, name, positions))
    return findings


def _running_count(flags: np.ndarray) -> np.ndarray:
    """``out[j]``: how many of ``flags[:j]`` are set."""
    out = np.zeros(len(flags) + 1, dtype=np.int64)
    np.cumsum(flags, out=out[1:])
    return out


def _hidden_copy(ctx: FindingContext, region: str, n: int, name: str, positions: list[int]
                 ) -> Finding:
    copies = [j for i in positions for j in _copies_in(ctx, i)]
    size = max((_copied_bytes(ctx, j) or 0 for j in copies), default=0)
    cpu_us = math.fsum(float(ctx.ops.dur[j]) for j in copies) / n
    shape = tensor_args(ctx.ops, copies[0])[0]
    evidence = [
        f"{name} → aten::clone → aten::copy_ + {name}_: {len(positions) / n:g} per forward, "
        f"copying {list(shape.dims)} {shape.dtype} ({bytes_text(size)}) each time, "
        f"{us_text(cpu_us)} of copy per forward"
    ]
    kernels = [d for i in positions for d in ctx.devices_under(i).tolist()
               if any(ctx.devices.op[d] == j for j in copies)]
    device_us = 0.0
    if kernels:
        pos = np.array(kernels)
        device_us = ctx.device_us(pos) / n
        evidence.append(f"copy kernel {', '.join(ctx.device_names(pos))}: "
                        f"{len(kernels) / n:g} per forward, {us_text(device_us)} per forward")
    return Finding(
        rule="hidden-copy", severity="warning", region=region,
        title=f"{name} makes a hidden full copy of its input",
        evidence=evidence,
        fix=(f"use the in-place {name.removeprefix('aten::')}_ under torch.no_grad() "
             "(inference), or let a fused SDPA backend apply the mask inside the kernel "
             "(is_causal=True or attn_mask)"),
        data={"op": name, "per_forward": len(positions) / n, "bytes": size,
              "copy_us_per_forward": cpu_us, "kernel_us_per_forward": device_us or None},
    )


def detect_kv_expansion(ctx: FindingContext) -> list[Finding]:
    """K/V heads copied ``groups`` times by repeat_interleave / repeat / expand + reshape."""
    findings = []
    workload = ctx.workload
    for region, view in ctx.regions():
        hits = []
        for i in ctx.ops_named(view, _REPEATS):
            if any(ctx.under(i, owner) for owner in LIBRARY_ATTENTION):
                continue
            if ctx.under_matching(i, _ANY_REPEAT):
                continue  # counted at the outermost repeat
            copies = _copies_in(ctx, i)
            if copies and _looks_like_kv(ctx, i, copies[0], workload):
                hits.append((i, copies))
        if hits:
            findings.append(_kv_finding(ctx, region.name, view.n, hits))
    return findings


def _looks_like_kv(ctx: FindingContext, op: int, copy_op: int, workload: Workload | None) -> bool:
    src = tensor_args(ctx.ops, op)
    out = tensor_args(ctx.ops, copy_op)
    if not src or not out:
        return False
    d = src[0].dims
    if workload is not None:
        if workload.groups == 1:
            return False
        kv = (workload.batch, workload.num_kv_heads, workload.k_len, workload.head_dim)
        grouped = (workload.batch, workload.num_kv_heads, workload.groups, workload.k_len,
                   workload.head_dim)
        # repeat_interleave/repeat read (B, Hkv, S, D); expand + reshape reads the expanded
        # (B, Hkv, groups, S, D) view. Either way the copy holds all query heads' worth.
        expanded = workload.batch * workload.heads * workload.k_len * workload.head_dim
        return d in (kv, grouped) and out[0].numel == expanded
    # No workload: only the unambiguous form, a repeat of a 4-D (B, H, S, D) tensor that
    # writes more elements than it reads (a 5-D reshape could be anything in a foreign model).
    return ctx.ops.names[op] != "aten::reshape" and len(d) == 4 and out[0].numel > src[0].numel


def _kv_finding(ctx: FindingContext, region: str, n: int, hits: list[tuple[int, list[int]]]
                ) -> Finding:
    names = ctx.ops.names
    copies = [j for _, cs in hits for j in cs]
    total = sum(_copied_bytes(ctx, j) or 0 for j in copies)
    cpu_us = math.fsum(float(ctx.ops.dur[j]) for j in copies) / n
    first, _ = hits[0]
    src = tensor_args(ctx.ops, first)[0]
    out = tensor_args(ctx.ops, hits[0][1][0])[0]
    evidence = [
        f"{names[first]} {list(src.dims)} → copy {list(out.dims)} {out.dtype}: "
        f"{len(hits) / n:g} per forward, {bytes_text(total / n)} written per forward, "
        f"{us_text(cpu_us)} per forward"
    ]
    kernels = [d for i, _ in hits for d in ctx.devices_under(i).tolist()]
    if kernels:
        pos = np.array(kernels)
        evidence.append(f"kernels {', '.join(ctx.device_names(pos))}: "
                        f"{us_text(ctx.device_us(pos) / n)} per forward")
    workload = ctx.workload
    if workload is not None and workload.groups > 1:
        evidence.append(f"workload has {workload.heads} query heads sharing "
                        f"{workload.num_kv_heads} K/V heads: each K/V head is copied "
                        f"{workload.groups}×")
    return Finding(
        rule="kv-expanded", severity="warning", region=region,
        title="K/V heads materialised by repeat before attention",
        evidence=evidence,
        fix=("pass K/V with their own head count and let attention share them: "
             "F.scaled_dot_product_attention(..., enable_gqa=True) or "
             "flex_attention(..., enable_gqa=True)"),
        data={"ops": sorted({names[i] for i, _ in hits}), "per_forward": len(hits) / n,
              "bytes_per_forward": total / n, "copy_us_per_forward": cpu_us},
    )


def detect_layout_copies(ctx: FindingContext) -> list[Finding]:
    """Full copies of an attention-sized tensor (q, k, v, the scores, the output) that a layout
    forced: ``.contiguous()``, ``.clone()``, a ``reshape`` no view can express, a direct
    ``copy_``. Each is reported with the op path that made it, bytes and time per forward.
    """
    findings = []
    for region, view in ctx.regions():
        tensors = attention_tensors(ctx, view)
        if not tensors:
            continue
        groups: dict[tuple[str, tuple[int, ...], str], list[int]] = defaultdict(list)
        for j in ctx.ops_named(view, {"aten::copy_"}):
            args = tensor_args(ctx.ops, j)
            if not args or tensors.what(args[0]) is None:
                continue
            path = _layout_path(ctx, j)
            if path is not None:
                groups[(path, args[0].dims, args[0].dtype)].append(j)
        if groups:
            findings.append(_layout_finding(ctx, region.name, view.n, groups, tensors))
    return findings


def _layout_path(ctx: FindingContext, copy_op: int) -> str | None:
    """The op path (outermost first) of a copy a layout forced, else ``None``."""
    names = ctx.ops.names
    chain = [j for j in reversed(list(ctx.ops.ancestors(copy_op)))
             if not ctx.ops.annotation[j]]
    chain_names = [names[j] for j in chain]
    if any(owner in n for n in chain_names for owner in LIBRARY_ATTENTION):
        return None
    if any(n.startswith("autograd::") or "Backward" in n for n in chain_names):
        return None  # backward: not the forward's layout
    if any(n in _NOT_LAYOUT for n in chain_names):
        return None
    for j in chain:
        n = names[j]
        if n.startswith("aten::") and not n.endswith("_") and n not in _NOT_HIDDEN and any(
                names[x] == f"{n}_" for x in ctx.subtree(j)):
            return None  # an out-of-place op's clone: detect_hidden_copies reports it
        if n in _REPEATS and ctx.workload is not None and _looks_like_kv(
                ctx, j, copy_op, ctx.workload):
            return None  # K/V expanded by expand + reshape: detect_kv_expansion's
    if not chain or not any(n in _LAYOUT_CAUSES for n in chain_names):
        if chain:
            return None  # a copy inside another op (addmm's bias, cat, index_put, ...)
        before = int(copy_op) - 1
        while before >= 0 and ctx.ops.parent[before] != ctx.ops.parent[copy_op]:
            before = int(ctx.ops.parent[before])  # up to the previous sibling
        if before >= 0 and names[before] in _SETITEM_VIEWS:
            return None  # ``out[:, h] = x``: a result written into place, not a layout
        chain_names = []  # the user's own full copy_
    return PATH_SEP.join([*chain_names, "aten::copy_"])


def _layout_finding(ctx: FindingContext, region: str, n: int,
                    groups: dict[tuple[str, tuple[int, ...], str], list[int]],
                    tensors: AttentionTensors) -> Finding:
    evidence = []
    total_bytes, total_cpu, total_kernel = 0.0, 0.0, 0.0
    count = 0
    paths, labels = [], []
    for (path, dims, dtype), copies in groups.items():
        arg = tensor_args(ctx.ops, copies[0])[0]
        size = arg.nbytes or 0
        cpu_us = math.fsum(float(ctx.ops.dur[j]) for j in copies) / n
        per = len(copies) / n
        what = tensors.what(arg) or "?"
        line = (f"{path}: {per:g} per forward, {list(dims)} {dtype} "
                f"({what} in another layout, {bytes_text(size)}) each, "
                f"{us_text(cpu_us)} of copy per forward")
        kernels = np.array([d for j in copies for d in ctx.devices_under(j).tolist()],
                           dtype=np.int64)
        if len(kernels):
            kernel_us = ctx.device_us(kernels) / n
            total_kernel += kernel_us
            shorts = dict.fromkeys(decode_kernel_name(k).short for k in ctx.device_names(kernels))
            line += f"; kernel {', '.join(shorts)}: {us_text(kernel_us)} per forward"
        evidence.append(line)
        total_bytes += size * per
        total_cpu += cpu_us
        count += len(copies)
        paths.append(path)
        labels.append(what)
    causes = list(dict.fromkeys(_cause(p) for p in paths))
    copied = list(dict.fromkeys(what for what in labels))
    evidence.append(f"in all: {count / n:g} full copies, {bytes_text(total_bytes)} written "
                    "per forward")
    return Finding(
        rule="layout-copy", severity="warning", region=region,
        title=(f"{' and '.join(causes)} copies whole attention tensors ({'; '.join(copied)}) "
               "every forward"),
        evidence=evidence,
        fix=("keep q, k, v and the output in the [B, H, S, D] layout SDPA takes and pass the "
             "transposed views as they are (SDPA and matmul accept strided inputs): drop the "
             ".contiguous()/.clone(); where a reshape copies, transpose after it (view the "
             "[B, S, H·D] projection as [B, S, H, D], then .transpose(1, 2)) instead of "
             "before it"),
        data={"copies_per_forward": count / n, "bytes_per_forward": total_bytes,
              "copy_us_per_forward": total_cpu, "kernel_us_per_forward": total_kernel or None,
              "paths": list(dict.fromkeys(paths)), "causes": causes},
    )


def _cause(path: str) -> str:
    """The outermost layout op of a copy's path (``aten::copy_`` for a direct copy)."""
    steps = path.split(PATH_SEP)
    return next((step for step in steps if step in _LAYOUT_CAUSES), steps[-1])
