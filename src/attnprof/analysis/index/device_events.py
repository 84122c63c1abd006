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

import msgspec
import numpy as np

from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import distinct, is_in, names_matching
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.knowledge.trace_categories import (
    DEVICE_CATEGORIES,
    FLOW_CATEGORIES,
    RUNTIME_CATEGORIES,
)

__all__ = ["DeviceEvents", "link_device_events"]

# Runtime calls that start device work; preferred when a correlation id is reused.
_LAUNCH = re.compile(r"(?i:launch|memcpy|memset)")


#: What a device event is, by its ``kind`` code.
DEVICE_KINDS = ("compute", "memcpy", "memset", "communication")


class DeviceEvents(msgspec.Struct, frozen=True):
    """One entry per device event, in time order.

    ``kind`` codes what it is (:data:`DEVICE_KINDS`); ``launch`` is the runtime event's row
    in the trace (-1: not in the trace), ``api`` its name's string id (-1); ``op`` the
    launching CPU op's position in the :class:`OpIndex` (-1: unknown);
    ``where_pid``/``where_ts`` locate the launch on the CPU timeline, used to assign the
    event to a region instance (nan ts: unlinked).
    """

    row: np.ndarray
    name: np.ndarray
    kind: np.ndarray
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

    @property
    def category(self) -> tuple[str, ...]:
        """What each event is: compute, memcpy, memset or communication."""
        return tuple(DEVICE_KINDS[k] for k in self.kind.tolist())


def link_device_events(ops: OpIndex) -> DeviceEvents:
    """Find every device event and join it to its launch and launching CPU op."""
    t = ops.trace.events
    cat_ids = {t.strings.id_of(c): k for c, k in DEVICE_CATEGORIES.items()}
    cat_ids.pop(-1, None)
    keep = t.mask_ph("X") & np.isin(t.cat, list(cat_ids)) & t.mask_timed()
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(t.ts[rows], kind="stable")]
    names = t.name[rows]
    kind = _kinds(t.cat[rows], names, cat_ids, t.strings.__getitem__)
    corr = t.correlation[rows].astype(np.int64)
    # CUPTI and roctracer number correlations from 1: a 0 is "none", as -1 is (a 0 taken
    # for an id joins the event to whatever else wrote 0).
    corr[corr == 0] = -1
    _fill_from_flows(ops, rows, corr)
    launch = _launch_rows(ops, corr)
    n = len(rows)
    op = np.full(n, -1, dtype=np.int64)
    where_pid = np.full(n, -1, dtype=np.int64)
    where_ts = np.full(n, np.nan)
    api = np.full(n, -1, dtype=np.int64)
    # Launched from a runtime call in the trace: it lies inside the launching op (or, when
    # it lies in none, the op shares its External id).
    known = np.flatnonzero(launch >= 0)
    r = launch[known]
    api[known] = t.name[r]
    where_pid[known], where_ts[known] = t.pid[r], t.ts[r]
    op[known] = ops.enclosing_many(t.pid[r], t.tid[r], t.ts[r])
    lost = known[op[known] < 0]
    op[lost] = ops.with_external_id(t.external_id[launch[lost]])
    # No launch in the trace: the device event's own External id names the op.
    unknown = np.flatnonzero(launch < 0)
    j = ops.with_external_id(t.external_id[rows[unknown]])
    hit, j = unknown[j >= 0], j[j >= 0]
    op[hit], where_pid[hit], where_ts[hit] = j, ops.pid[j], ops.start[j]
    return DeviceEvents(row=rows, name=names, kind=kind, start=t.ts[rows],
                        end=t.ts[rows] + t.dur[rows], launch=launch, api=api, op=op,
                        where_pid=where_pid, where_ts=where_ts)


def _kinds(cats: np.ndarray, names: np.ndarray, cat_ids: Mapping[int, str],
           text: Callable[[int], str]) -> np.ndarray:
    """The kind code of each device event: by category, kernels split by name."""
    kind = np.zeros(len(cats), dtype=np.int64)
    for cat_id, what in cat_ids.items():
        kind[cats == cat_id] = DEVICE_KINDS.index(what)
    comm = [i for i in distinct(names).tolist() if decode_kernel_name(text(i)).family == "nccl"]
    kind[(kind == DEVICE_KINDS.index("compute")) & is_in(names, comm)] = DEVICE_KINDS.index(
        "communication")
    return kind


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
    """The runtime event row for each correlation id (-1 when absent).

    When several runtime events share an id, the last one that launches, copies or sets
    wins, else the first one.
    """
    t = ops.trace.events
    runtime = np.flatnonzero(t.mask_cat(*RUNTIME_CATEGORIES) & t.mask_ph("X"))
    runtime = runtime[is_in(t.correlation[runtime], corr[corr > 0])]
    out = np.full(len(corr), -1, dtype=np.int64)
    if not len(runtime):
        return out
    ids = t.correlation[runtime].astype(np.int64)
    launches = names_matching(t.name[runtime], t.strings.__getitem__, _LAUNCH)
    # Rank the candidates of each id: launching ones by position (the last wins), before
    # them every other one, the first of which wins.
    rank = np.where(launches, np.arange(len(runtime)) + 1, -np.arange(len(runtime)))
    order = np.lexsort((rank, ids))
    last = np.r_[ids[order][1:] != ids[order][:-1], True]
    best_ids, best_rows = ids[order][last], runtime[order][last]
    at = np.clip(np.searchsorted(best_ids, corr), 0, len(best_ids) - 1)
    return np.where((corr > 0) & (best_ids[at] == corr), best_rows[at], -1)
