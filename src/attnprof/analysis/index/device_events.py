"""Device events (kernels, copies, sets) joined to the launch that issued them and its CPU op.

A kernel runs asynchronously, often after the CPU op that launched it has returned, so time
says nothing about who launched it. The trace links them explicitly: the device event and
the runtime call that launched it (``cudaLaunchKernel``, ``cuLaunchKernelEx``,
``cudaMemcpyAsync``, ``hipLaunchKernel``, ...) carry the same ``correlation`` id. The
launch, a CPU event, then lies inside the ATen op that made it, on the same thread.

Fallbacks, for traces that lack a piece: when a device event has no ``correlation``, the
``ac2g`` flow arriving at it carries the launch's correlation as its id; when the launch is
missing (launched before profiling started) or lies outside every op, the ``External id``
that the device event, the launch and the op share names the op. A device event still
unlinked belongs to no region: it is never assigned by time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.knowledge.trace_categories import (
    DEVICE_CATEGORIES,
    FLOW_CATEGORIES,
    RUNTIME_CATEGORIES,
)

__all__ = ["DeviceEvents", "link_device_events"]

# Runtime calls that start device work; preferred when a correlation id is reused.
_LAUNCH = re.compile(r"(?i:launch|memcpy|memset)")


@dataclass(frozen=True)
class DeviceEvents:
    """One entry per device event, in time order.

    ``launch`` is the runtime event's row in the trace (-1: not in the trace), ``api`` its
    name's string id (-1); ``op`` the launching CPU op's position in the :class:`OpIndex`
    (-1: unknown); ``where_pid``/``where_ts`` locate the launch on the CPU timeline, used to
    assign the event to a region instance (nan ts: unlinked).
    """

    row: np.ndarray
    name: np.ndarray
    category: tuple[str, ...]  # compute | memcpy | memset | communication
    start: np.ndarray
    end: np.ndarray
    launch: np.ndarray
    api: np.ndarray
    op: np.ndarray
    where_pid: np.ndarray
    where_ts: np.ndarray

    def __len__(self) -> int:
        return len(self.row)

    @property
    def dur(self) -> np.ndarray:
        """Duration of every device event, µs."""
        return self.end - self.start


def link_device_events(ops: OpIndex) -> DeviceEvents:
    """Find every device event and join it to its launch and launching CPU op."""
    t = ops.trace.events
    cat_ids = {t.strings.id_of(c): k for c, k in DEVICE_CATEGORIES.items()}
    cat_ids.pop(-1, None)
    with np.errstate(invalid="ignore"):
        keep = (t.mask_ph("X") & np.isin(t.cat, list(cat_ids)) & np.isfinite(t.ts)
                & np.isfinite(t.dur))
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(t.ts[rows], kind="stable")]
    names = t.name[rows]
    categories = _categories(t.cat[rows].tolist(), names, cat_ids, t.strings.__getitem__)
    corr = t.correlation[rows].copy()
    _fill_from_flows(ops, rows, corr)
    launch = _launch_rows(ops, corr)
    n = len(rows)
    op = np.full(n, -1, dtype=np.int64)
    where_pid = np.full(n, -1, dtype=np.int64)
    where_ts = np.full(n, np.nan)
    api = np.full(n, -1, dtype=np.int64)
    ext_ops = ops.external_ids
    for k in range(n):
        r = int(launch[k])
        if r >= 0:
            pid, tid, ts = int(t.pid[r]), int(t.tid[r]), float(t.ts[r])
            api[k] = int(t.name[r])
            where_pid[k], where_ts[k] = pid, ts
            op[k] = ops.enclosing(pid, tid, ts)
            if op[k] < 0:
                op[k] = ext_ops.get(int(t.external_id[r]), -1)
            continue
        j = ext_ops.get(int(t.external_id[rows[k]]), -1)
        if j >= 0:
            op[k], where_pid[k], where_ts[k] = j, int(ops.pid[j]), float(ops.start[j])
    return DeviceEvents(row=rows, name=names, category=categories, start=t.ts[rows],
                        end=t.ts[rows] + t.dur[rows], launch=launch, api=api, op=op,
                        where_pid=where_pid, where_ts=where_ts)


def _categories(cats: list[int], names: np.ndarray, cat_ids: Mapping[int, str],
                text: Callable[[int], str]) -> tuple[str, ...]:
    comm = {i for i in np.unique(names).tolist() if decode_kernel_name(text(i)).family == "nccl"}
    out = []
    for c, nm in zip(cats, names.tolist(), strict=True):
        kind = cat_ids[c]
        out.append("communication" if kind == "compute" and nm in comm else kind)
    return tuple(out)


def _fill_from_flows(ops: OpIndex, rows: np.ndarray, corr: np.ndarray) -> None:
    """Give correlation-less device events the id of the flow that arrives at them."""
    missing = np.flatnonzero(corr < 0)
    if len(missing) == 0:
        return
    t = ops.trace.events
    flows = np.flatnonzero(t.mask_cat(*FLOW_CATEGORIES) & t.mask_ph("f") & (t.flow_id >= 0))
    arriving = {
        (int(t.pid[f]), int(t.tid[f]), float(t.ts[f])): int(t.flow_id[f]) for f in flows.tolist()
    }
    for k in missing.tolist():
        r = int(rows[k])
        corr[k] = arriving.get((int(t.pid[r]), int(t.tid[r]), float(t.ts[r])), -1)


def _launch_rows(ops: OpIndex, corr: np.ndarray) -> np.ndarray:
    """The runtime event row for each correlation id (-1 when absent)."""
    t = ops.trace.events
    runtime = np.flatnonzero(t.mask_cat(*RUNTIME_CATEGORIES) & t.mask_ph("X")
                             & np.isin(t.correlation, corr[corr >= 0]))
    by_corr: dict[int, int] = {}
    for r in runtime.tolist():
        c = int(t.correlation[r])
        if c not in by_corr or _LAUNCH.search(t.strings[int(t.name[r])]):
            by_corr[c] = r
    return np.array([by_corr.get(int(c), -1) for c in corr.tolist()], dtype=np.int64)
