"""Kernels per forward: each kernel of a region, what launched it, and how it was launched.

A region pass (see :mod:`attnprof.analysis.passes`). Kernels are grouped by (name,
call path): the same ``aten::copy_`` reached through ``repeat_interleave`` and through
``masked_fill`` is two rows, because an expert reads them as two different costs. Rows come
in the order they first ran, the order in which one reads a trace.

On a CPU-only trace the rows are the compute ops (:mod:`attnprof.analysis.index.compute_ops`)
and ``launched_by`` is the op that called them.

A row's dtype is the one its name states; where the name states none (cuDNN's generated
attention kernels, FlashAttention-4, many ATen kernels, every CPU op) it is read off the
recorded input types of the op that launched it (on CPU, of the op itself), and
``dtype_source`` says which. With neither, it stays unknown: never a guess.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.tensor_args import tensor_args
from attnprof.analysis.index.views import RegionView
from attnprof.knowledge.kernel_names import decode_kernel_name, names_integer_data
from attnprof.record.trace_report import PATH_SEP, KernelStat

__all__ = ["launching_dtype", "summarize_kernels"]

# Launch APIs through which CUPTI reports no occupancy (cuDNN's path, CUTLASS/Triton with
# cluster launch): 0 or absent there is a gap in the measurement, not an idle GPU.
_NO_OCCUPANCY_APIS = ("cuLaunchKernelEx", "cudaLaunchKernelExC", "cudaLaunchKernelEx")
# torch.profiler's "Input type" names of floating (and fp8) types, in the decoder's vocabulary.
_TYPE_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8",
                "c10::Float8_e4m3fnuz": "fp8", "c10::Float8_e5m2fnuz": "fp8"}
# Copies and memsets move bytes: no precision to state.
_NO_DTYPE_CATEGORIES = frozenset({"memcpy", "memset"})


@dataclass
class _Group:
    name: int
    path: tuple[int, ...]
    first: tuple[int, float]
    category: str
    durs: list[float] = field(default_factory=list)
    apis: Counter[int] = field(default_factory=Counter)
    sample: int = -1  # a trace row with launch details, if any
    op: int = -1  # the launching op of the first launch (CPU: the compute op itself)


def summarize_kernels(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``kernels``, ``kernels_per_forward``, ``kernel_source`` and ``launch_apis``."""
    groups = _device_groups(view) if view.on_device else _cpu_groups(view)
    total = math.fsum(d for g in groups.values() for d in g.durs)
    ordered = sorted(groups.values(), key=lambda g: g.first)
    kernels = [_stat(view, g, total) for g in ordered]
    strings = view.ops.trace.events.strings
    apis: Counter[str] = Counter()
    for g in ordered:
        for api, c in g.apis.items():
            apis[strings[api]] += c
    count = sum(k.count for k in kernels)
    return {
        "kernels": kernels,
        "kernels_per_forward": count / view.n if view.n else 0.0,
        "kernel_source": "kernels" if view.on_device else "cpu-ops",
        "launch_apis": dict(sorted(apis.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def _path(view: RegionView, op: int, root: int, include_self: bool) -> tuple[int, ...]:
    """Op names from the region down to ``op``: the key a kernel is grouped under.

    User annotations are left out: foreign traces wrap warm-up and measured iterations in
    differently named ranges (``...|warmup|forward``, ``...|measure|forward``), which would
    split one kernel into look-alike rows. Consecutive repeats collapse into one name
    (vmap and decompositions nest ``aten::le`` in ``aten::le`` ten deep).
    """
    if op < 0:
        return ()
    ops = view.ops
    chain = [op] if include_self else []
    chain.extend(ops.ancestors(op, stop=root))
    names: list[int] = []
    for j in reversed(chain):
        if ops.annotation[j]:
            continue
        name = int(ops.name[j])
        if not names or names[-1] != name:
            names.append(name)
    return tuple(names)


def _device_groups(view: RegionView) -> dict[tuple[int, tuple[int, ...]], _Group]:
    dev = view.devices
    launch_col = view.ops.trace.events.launch
    groups: dict[tuple[int, tuple[int, ...]], _Group] = {}
    for k, positions in enumerate(view.device_of):
        root, t0 = view.instance_root(k), view.instances[k].start
        for d in positions.tolist():
            key = (int(dev.name[d]), _path(view, int(dev.op[d]), root, include_self=True))
            g = groups.get(key)
            if g is None:
                g = groups[key] = _Group(key[0], key[1], (k, float(dev.start[d]) - t0),
                                         dev.category[d], op=int(dev.op[d]))
            g.durs.append(float(dev.end[d] - dev.start[d]))
            if dev.api[d] >= 0:
                g.apis[int(dev.api[d])] += 1
            if g.sample < 0 and launch_col[dev.row[d]] >= 0:
                g.sample = int(dev.row[d])
    return groups


def _cpu_groups(view: RegionView) -> dict[tuple[int, tuple[int, ...]], _Group]:
    ops = view.ops
    groups: dict[tuple[int, tuple[int, ...]], _Group] = {}
    for k, (found, work_us) in enumerate(zip(view.compute_of, view.compute_us_of,
                                             strict=True)):
        root, t0 = view.instance_root(k), view.instances[k].start
        for i, us in zip(found.tolist(), work_us.tolist(), strict=True):
            key = (int(ops.name[i]), _path(view, i, root, include_self=False))
            g = groups.get(key)
            if g is None:
                g = groups[key] = _Group(key[0], key[1], (k, float(ops.start[i]) - t0), "cpu-op",
                                         op=i)
            g.durs.append(us)
    return groups


def _stat(view: RegionView, g: _Group, total: float) -> KernelStat:
    strings = view.ops.trace.events.strings
    name = strings[g.name]
    decoded = decode_kernel_name(name)
    count = len(g.durs)
    sum_us = math.fsum(g.durs)
    api = strings[g.apis.most_common(1)[0][0]] if g.apis else None
    props = _launch_props(view, g.sample)
    dtype, source = decoded.dtype, "name" if decoded.dtype else None
    if (dtype is None and g.category not in _NO_DTYPE_CATEGORIES
            and not names_integer_data(name)):
        dtype = launching_dtype(view.ops, g.op)
        source = "launching op" if dtype else None
    short = decoded.short
    if source == "launching op":
        short = f"{short} · {dtype} (launching op)"
    elif dtype is None and (decoded.is_attention or decoded.family in ("gemm", "conv")):
        short = f"{short} · dtype ?"  # a matmul whose precision nothing in the trace states
    return KernelStat(
        name=name, short=short, family=decoded.family, count=count,
        per_forward=count / view.n, total_us=sum_us, mean_us=sum_us / count,
        share=sum_us / total if total > 0 else 0.0,
        launched_by=strings[g.path[-1]] if g.path else None,
        call_path=PATH_SEP.join(strings[i] for i in g.path) or None,
        tensor_cores=decoded.tensor_cores, dtype=dtype, dtype_source=source, tile=decoded.tile,
        arch=decoded.arch, launch_api=api, category=g.category,
        note=_note(g.category, api, props, view.on_device), **props,
    )


def launching_dtype(ops: OpIndex, op: int) -> str | None:
    """The precision of the first floating tensor op ``op`` was given (``None``: no such
    tensor recorded, e.g. a trace without ``record_shapes``, or integer inputs only)."""
    if op < 0:
        return None
    for arg in tensor_args(ops, op):
        if arg.dtype in _TYPE_DTYPES:
            return _TYPE_DTYPES[arg.dtype]
    return None


def _launch_props(view: RegionView, row: int) -> dict[str, Any]:
    """Grid, block, registers, shared memory and occupancy of one launch, None if absent."""
    none: dict[str, Any] = {"grid": None, "block": None, "registers_per_thread": None,
                            "shared_memory": None, "occupancy": None}
    if row < 0:
        return none
    t = view.ops.trace.events
    li = int(t.launch[row])
    side = t.launches
    grid, block = side.grid[li].tolist(), side.block[li].tolist()
    regs, smem = int(side.registers_per_thread[li]), int(side.shared_memory[li])
    occ = float(side.occupancy[li])
    return {
        "grid": grid if min(grid) >= 0 else None,
        "block": block if min(block) >= 0 else None,
        "registers_per_thread": regs if regs >= 0 else None,
        "shared_memory": smem if smem >= 0 else None,
        "occupancy": occ if np.isfinite(occ) else None,
    }


def _note(category: str, api: str | None, props: dict[str, Any], on_device: bool) -> str | None:
    if not on_device or category not in ("compute", "communication"):
        return None
    occ = props["occupancy"]
    if api is not None and api.startswith(_NO_OCCUPANCY_APIS) and not occ:
        return (f"occupancy not reported by CUPTI for this launch path ({api}): a measurement "
                "gap, not an idle GPU")
    if props["grid"] is None:
        via = f" ({api})" if api else ""
        return f"grid/block/registers not reported by this trace for this launch path{via}"
    if occ is None:
        return "occupancy not reported by CUPTI for this launch"
    return None
