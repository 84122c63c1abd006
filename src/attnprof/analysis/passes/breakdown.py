"""Where device time goes: per kernel name, and per kind of device work.

:func:`kernel_breakdown` is a pure pass over a loaded :class:`~attnprof.trace.Trace`. It
counts every complete (``"X"``) device activity: kernels (``cat`` "kernel"), copies
("gpu_memcpy") and sets ("gpu_memset"); the capitalised categories of older traces
("Kernel", "Memcpy", "Memset") count the same. Kernels split into *compute* and
*communication*, the latter being NCCL/RCCL collectives as
:func:`~attnprof.knowledge.kernel_names.decode_kernel_name` classifies them.

Times are sums of event durations in µs, not wall time: kernels that overlap on different
streams are each counted in full, so shares are "share of summed device time". Sums are
exactly rounded (:func:`math.fsum`), so they do not depend on event order. Events that
cannot be placed in time (a missing or negative duration: ``TraceMeta.skipped_events``)
are left out, as everywhere in the analysis. A trace without
device events (a CPU-only capture) gives an empty breakdown, not an error.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from attnprof.analysis.index.pairs import distinct, is_in
from attnprof.knowledge.kernel_names import decode_kernel_name
from attnprof.knowledge.trace_categories import CATEGORIES, DEVICE_CATEGORIES, Category
from attnprof.record.trace_report import BreakdownCategory, BreakdownKernel, BreakdownReport
from attnprof.trace import Trace

__all__ = ["CATEGORIES", "DEVICE_CATEGORIES", "Category", "kernel_breakdown"]


def kernel_breakdown(trace: Trace) -> BreakdownReport:
    """Count device kernels, copies and sets by name and by category; see the module doc."""
    t = trace.events
    code_of = {t.strings.id_of(c): CATEGORIES.index(k) for c, k in DEVICE_CATEGORIES.items()}
    code_of.pop(-1, None)  # categories this trace does not use
    dur = t.dur
    keep = t.mask_ph("X") & np.isin(t.cat, list(code_of)) & t.mask_timed()
    names, cats, durs = t.name[keep], t.cat[keep], dur[keep]
    codes = np.zeros(len(names), dtype=np.int64)
    for cat_id, code in code_of.items():
        codes[cats == cat_id] = code
    # Communication is a kind of kernel told apart by its name.
    kernel_ids = distinct(names[codes == 0]).tolist()
    comm_ids = [i for i in kernel_ids if decode_kernel_name(t.strings[i]).family == "nccl"]
    codes[(codes == 0) & is_in(names, comm_ids)] = CATEGORIES.index("communication")

    total = math.fsum(durs.tolist())
    kernels = _per_name(names, codes, durs, total, t.strings.__getitem__)
    categories = tuple(
        BreakdownCategory(
            category=cat,
            count=int((codes == i).sum()),
            total_us=(s := math.fsum(durs[codes == i].tolist())),
            share=s / total if total > 0 else 0.0,
        )
        for i, cat in enumerate(CATEGORIES)
    )
    return BreakdownReport(kernels=kernels, categories=categories, count=len(durs),
                           total_us=total)


def _per_name(
    names: np.ndarray, codes: np.ndarray, durs: np.ndarray, total: float, text: Callable[[int], str]
) -> tuple[BreakdownKernel, ...]:
    if len(names) == 0:
        return ()
    # Group by (category, name): sort once, then reduce each contiguous run.
    key = codes * (int(names.max()) + 1) + names
    order = np.argsort(key, kind="stable")
    key, d = key[order], durs[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    mins = np.minimum.reduceat(d, starts)
    maxs = np.maximum.reduceat(d, starts)
    rows = []
    for s, e, lo, hi in zip(
        starts.tolist(), ends.tolist(), mins.tolist(), maxs.tolist(), strict=True
    ):
        run = order[s]
        sum_us = math.fsum(d[s:e].tolist())
        name = text(int(names[run]))
        rows.append(
            BreakdownKernel(
                name=name,
                short=decode_kernel_name(name).short,
                category=CATEGORIES[int(codes[run])],
                count=e - s,
                total_us=sum_us,
                mean_us=sum_us / (e - s),
                min_us=lo,
                max_us=hi,
                share=sum_us / total if total > 0 else 0.0,
            )
        )
    rows.sort(key=lambda k: (-k.total_us, k.name))
    return tuple(rows)
