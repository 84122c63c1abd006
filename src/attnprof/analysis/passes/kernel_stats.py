"""Kernels per forward: each kernel of a region, what launched it, and how it was launched.

A region pass (see :mod:`attnprof.analysis.passes`). Kernels are grouped by (name,
call path): the same ``aten::copy_`` reached through ``repeat_interleave`` and through
``masked_fill`` is two rows, because an expert reads them as two different costs. Rows come
in the order they first ran, the order in which one reads a trace.

On a CPU-only trace the rows are the compute ops (:mod:`attnprof.analysis.index.compute_ops`)
and ``launched_by`` is the op that called them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import numpy as np

from attnprof.analysis.index.call_paths import EMPTY_PATH
from attnprof.analysis.index.device_events import DEVICE_KINDS
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import unique_pairs
from attnprof.analysis.index.tensor_args import tensor_args
from attnprof.analysis.index.views import RegionView
from attnprof.analysis.passes.occupancy import LaunchOccupancy, device_props, launch_occupancy
from attnprof.knowledge.kernel_names import decode_kernel_name, names_integer_data
from attnprof.record.trace_report import PATH_SEP, KernelStat

__all__ = ["launching_dtype", "summarize_kernels"]

# torch.profiler's "Input type" names of floating (and fp8) types, in the decoder's vocabulary.
_TYPE_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8",
                "c10::Float8_e4m3fnuz": "fp8", "c10::Float8_e5m2fnuz": "fp8"}
# Copies and memsets move bytes: no precision to state.
_NO_DTYPE_CATEGORIES = frozenset({"memcpy", "memset"})


class _Visits(msgspec.Struct, frozen=True):
    """The kernels (or compute ops) of a region, one entry per occurrence in an instance."""

    name: np.ndarray  # name ids
    op: np.ndarray  # the op whose path (up to the instance) is the call path; -1: none
    include_self: bool  # whether that op's own name ends the path (kernels: the launcher)
    instance: np.ndarray
    offset: np.ndarray  # start, µs after the instance's start
    dur: np.ndarray  # µs
    category: np.ndarray  # codes into _CATEGORY_NAMES
    api: np.ndarray  # launch API name ids (-1: none)
    sample: np.ndarray  # trace rows with launch details (-1: none)


def summarize_kernels(view: RegionView, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Fields ``kernels``, ``kernels_per_forward``, ``kernel_source`` and ``launch_apis``."""
    v = _device_visits(view) if view.on_device else _cpu_visits(view)
    strings = view.ops.trace.events.strings
    # Group by (name, call path); a group's place is where it first ran: its instance, its
    # time into it, and, between equals, which was met first.
    path, path_names = _paths(view, v)
    groups = unique_pairs(v.name, path)
    first, group = groups.index, groups.inverse
    order = np.lexsort((first, v.offset[first], v.instance[first]))
    durs = v.dur.tolist()
    total = math.fsum(durs)
    members = np.argsort(group, kind="stable")  # each group's visits, in visit order
    bounds = np.searchsorted(group[members], np.arange(len(first) + 1))
    apis = _launch_apis(v, group, len(first))
    kernels = []
    for g in order.tolist():
        mine = members[bounds[g]:bounds[g + 1]]
        api_ids, api_counts = apis[g]
        sampled = v.sample[mine]
        kernels.append(_stat(
            view, name=int(groups.first[g]), path=path_names(int(groups.second[g])),
            category=_CATEGORY_NAMES[int(v.category[first[g]])],
            durs=[durs[i] for i in mine.tolist()], total=total,
            api=strings[api_ids[0]] if api_ids else None, op=int(v.op[first[g]]),
            sample=int(sampled[sampled >= 0][0]) if (sampled >= 0).any() else -1))
    launch_apis: Counter[str] = Counter()
    for api_ids, api_counts in apis:
        for api, c in zip(api_ids, api_counts, strict=True):
            launch_apis[strings[api]] += c
    count = sum(k.count for k in kernels)
    return {
        "kernels": kernels,
        "kernels_per_forward": count / view.n if view.n else 0.0,
        "kernel_source": "kernels" if view.on_device else "cpu-ops",
        "launch_apis": dict(sorted(launch_apis.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


def _paths(view: RegionView, v: _Visits) -> tuple[np.ndarray, Callable[[int], tuple[int, ...]]]:
    """The call path of every visit as an integer, and how to turn one into its name ids.

    The path is the op names from the region down to the launching op (or, on a CPU trace,
    down to the compute op's caller), user annotations left out, consecutive repeats
    collapsed: the op's interned path node, since an instance's annotation adds nothing to
    it. Only when an instance's annotation lies inside ATen ops (whose names must then be
    left out) are the paths walked op by op.
    """
    ops = view.ops
    paths = ops.paths
    of = v.op if v.include_self else np.where(v.op >= 0, ops.parent[np.maximum(v.op, 0)], -1)
    node = np.where(of >= 0, paths.of_op[np.maximum(of, 0)], EMPTY_PATH)
    roots = view.roots
    nested = (roots >= 0) & (paths.of_op[np.maximum(roots, 0)] != EMPTY_PATH)
    if not nested[v.instance].any():
        return node, paths.names
    interned: dict[tuple[int, ...], int] = {}
    walked = np.array([
        interned.setdefault(
            _walk(view, op, int(roots[k]), v.include_self) if nested[k] else paths.names(n),
            len(interned))
        for op, k, n in zip(v.op.tolist(), v.instance.tolist(), node.tolist(), strict=True)],
        dtype=np.int64)
    names = list(interned)
    return walked, names.__getitem__


def _walk(view: RegionView, op: int, root: int, include_self: bool) -> tuple[int, ...]:
    """The call path of ``op`` below ``root``, found by walking up (see :func:`_paths`)."""
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


def _launch_apis(v: _Visits, group: np.ndarray, groups: int
                 ) -> list[tuple[list[int], list[int]]]:
    """Per group, its launch APIs most used first (ties: first met first), and their counts."""
    out: list[tuple[list[int], list[int]]] = [([], []) for _ in range(groups)]
    has = np.flatnonzero(v.api >= 0)
    if not len(has):
        return out
    pairs = unique_pairs(group[has], v.api[has])
    for k in np.lexsort((pairs.index, -pairs.counts, pairs.first)).tolist():
        out[int(pairs.first[k])][0].append(int(pairs.second[k]))
        out[int(pairs.first[k])][1].append(int(pairs.counts[k]))
    return out


_CATEGORY_NAMES = (*DEVICE_KINDS, "cpu-op")


def _device_visits(view: RegionView) -> _Visits:
    dev = view.devices
    at = view.device_visits
    instance = view.device_instance
    t0 = np.array([i.start for i in view.instances], dtype=np.float64)
    launch_col = view.ops.trace.events.launch
    rows = dev.row[at]
    return _Visits(name=dev.name[at].astype(np.int64), op=dev.op[at], include_self=True,
                   instance=instance,
                   offset=dev.start[at] - t0[instance], dur=dev.end[at] - dev.start[at],
                   category=dev.kind[at], api=dev.api[at],
                   sample=np.where(launch_col[rows] >= 0, rows, -1))


def _cpu_visits(view: RegionView) -> _Visits:
    ops = view.ops
    chosen = view.compute_mask
    at = view.op_positions[chosen]
    instance = view.visit_instance[chosen]
    t0 = np.array([i.start for i in view.instances], dtype=np.float64)
    none = np.full(len(at), -1, dtype=np.int64)
    return _Visits(name=ops.name[at].astype(np.int64), op=at, include_self=False,
                   instance=instance,
                   offset=ops.start[at] - t0[instance], dur=view.compute_us[chosen],
                   category=np.full(len(at), _CATEGORY_NAMES.index("cpu-op")), api=none,
                   sample=none)


def _stat(view: RegionView, *, name: int, path: tuple[int, ...], category: str,
          durs: list[float], total: float, api: str | None, sample: int, op: int
          ) -> KernelStat:
    """One row; ``op`` is the launching op of the group's first launch (CPU: the compute
    op itself), whose inputs state the precision when the kernel's name does not."""
    strings = view.ops.trace.events.strings
    text = strings[name]
    decoded = decode_kernel_name(text)
    count = len(durs)
    sum_us = math.fsum(durs)
    props = _launch_props(view, sample)
    occ = _occupancy(view, sample, props, api)
    props["occupancy"] = occ.estimate
    dtype, source = decoded.dtype, "name" if decoded.dtype else None
    if (dtype is None and category not in _NO_DTYPE_CATEGORIES
            and not names_integer_data(text)):
        dtype = launching_dtype(view.ops, op)
        source = "launching op" if dtype else None
    short = decoded.short
    if source == "launching op":
        short = f"{short} · {dtype} (launching op)"
    elif dtype is None and (decoded.is_attention or decoded.family in ("gemm", "conv")):
        short = f"{short} · dtype ?"  # a matmul whose precision nothing in the trace states
    return KernelStat(
        name=text, short=short, family=decoded.family, count=count,
        per_forward=count / view.n, total_us=sum_us, mean_us=sum_us / count,
        share=sum_us / total if total > 0 else 0.0,
        launched_by=strings[path[-1]] if path else None,
        call_path=PATH_SEP.join(strings[i] for i in path) or None,
        tensor_cores=decoded.tensor_cores, dtype=dtype, dtype_source=source, tile=decoded.tile,
        arch=decoded.arch, launch_api=api, category=category,
        theoretical_occupancy=occ.theoretical, occupancy_limited_by=occ.limited_by,
        note=_note(category, api, props, occ, view.on_device), **props,
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


def _occupancy(view: RegionView, row: int, props: dict[str, Any], api: str | None
               ) -> LaunchOccupancy:
    """CUPTI's occupancy of the launch at trace ``row`` (a 0 that is no estimate made
    absent) and the theoretical one on its device's architecture."""
    if row < 0 or not view.on_device:
        return LaunchOccupancy(props["occupancy"], None, None, None)
    trace = view.ops.trace
    device = device_props(trace.meta.device_properties, int(trace.events.device[row]))
    return launch_occupancy(device, props, api)


def _note(category: str, api: str | None, props: dict[str, Any], occ: LaunchOccupancy,
          on_device: bool) -> str | None:
    if not on_device or category not in ("compute", "communication"):
        return None
    if occ.gap:
        return occ.gap
    if props["grid"] is None:
        via = f" ({api})" if api else ""
        return f"grid/block/registers not reported by this trace for this launch path{via}"
    if occ is None:
        return "occupancy not reported by CUPTI for this launch"
    return None
