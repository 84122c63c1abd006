"""What a findings rule sees: the analysed report plus the indexed trace behind it.

A rule is a pure function ``rule(ctx: FindingContext) -> list[Finding]``. The report gives
the region statistics; the views give the ops and device events, for the evidence that the
statistics summarise away (which op called which, which shapes, which kernels under an op).
Workload and variant come from the trace's ``attnprof`` metadata when it has one; for a
foreign trace they are ``None`` and rules fall back to shapes and kernel names.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from functools import cached_property
from typing import Any

import msgspec
import numpy as np

from attnprof.analysis.index.device_events import DeviceEvents
from attnprof.analysis.index.op_index import OpIndex
from attnprof.analysis.index.pairs import is_in
from attnprof.analysis.index.views import RegionView
from attnprof.formatting import format_bytes, format_us
from attnprof.knowledge.annotations import REGION_PREFIX
from attnprof.record.trace_report import RegionReport, TraceReport
from attnprof.workload.problem import Workload

__all__ = ["LIBRARY_ATTENTION", "SCORE_PRODUCTS", "FindingContext", "bytes_text", "us_text"]

#: The ops that multiply q by k (or the scores by v) in an unfused attention.
SCORE_PRODUCTS = frozenset({"aten::matmul", "aten::bmm", "aten::baddbmm"})
#: Names of libraries' attention ops: what happens inside them (their math path, flex's
#: vmap) is the library's doing, not the user's code.
LIBRARY_ATTENTION = ("scaled_dot_product", "FlexAttention", "flex_attention")


class FindingContext(msgspec.Struct, frozen=True, dict=True):
    """The inputs of every findings rule (see the module doc)."""

    report: TraceReport
    views: tuple[RegionView, ...]  # same order as report.regions
    ops: OpIndex
    devices: DeviceEvents
    workload: Workload | None = None
    #: The run record's row for this variant (``attnprof profile``), for warnings/refusals.
    result: Any = None

    def regions(self) -> Iterator[tuple[RegionReport, RegionView]]:
        """Each region's report with its view."""
        return zip(self.report.regions, self.views, strict=True)

    def variant(self, region: RegionReport) -> str | None:
        """The attnprof variant a region measured (``attnprof::sdpa-flash`` -> ``sdpa-flash``)."""
        if region.name.startswith(REGION_PREFIX):
            return region.name[len(REGION_PREFIX):]
        return None

    def ops_named(self, view: RegionView, names: frozenset[str] | set[str]) -> list[int]:
        """Positions of the region's ops whose name is in ``names``."""
        strings = self.ops.trace.events.strings
        ids = [i for i in (strings.id_of(n) for n in names) if i >= 0]
        return self.ops_with_name_ids(view, ids)

    def ops_with_name_ids(self, view: RegionView, ids: list[int] | np.ndarray) -> list[int]:
        """Positions of the region's ops whose name id is in ``ids``, in region order."""
        pos = view.op_positions
        return pos[is_in(self.ops.name[pos], ids)].tolist()

    def subtree(self, i: int) -> range:
        """Op ``i`` and everything it called."""
        return range(i, int(self.ops.last[i]) + 1)

    def under(self, i: int, pattern: str) -> bool:
        """Whether op ``i`` runs inside an op whose name contains ``pattern``."""
        return self.under_matching(i, _containing(pattern))

    def under_matching(self, i: int, pattern: re.Pattern[str]) -> bool:
        """Whether op ``i`` runs inside an op whose name ``pattern`` finds (``re.search``)."""
        p = int(self.ops.parent[i])
        # "Inside" marks an op and its whole subtree, so the parent's mark says it all.
        return p >= 0 and bool(self.ops.inside(pattern)[p])

    def devices_under(self, i: int) -> np.ndarray:
        """Device events launched from op ``i`` or any op it called, in time order."""
        if not len(self.devices):
            return np.zeros(0, dtype=np.int64)
        by_op, ops_sorted = self._devices_by_op
        lo = np.searchsorted(ops_sorted, i, side="left")
        hi = np.searchsorted(ops_sorted, self.ops.last[i], side="right")
        return np.sort(by_op[lo:hi])

    @cached_property
    def _devices_by_op(self) -> tuple[np.ndarray, np.ndarray]:
        # A subtree is a range of op positions, so its launches are one slice of these.
        by_op = np.argsort(self.devices.op, kind="stable")
        return by_op, self.devices.op[by_op]

    def device_us(self, positions: np.ndarray) -> float:
        """Summed duration of some device events, µs."""
        return math.fsum((self.devices.end[positions] - self.devices.start[positions]).tolist())

    def device_names(self, positions: np.ndarray) -> list[str]:
        """Distinct names of some device events, first-seen order."""
        strings = self.ops.trace.events.strings
        return [strings[i] for i in dict.fromkeys(self.devices.name[positions].tolist())]


@functools.lru_cache(maxsize=64)
def _containing(text: str) -> re.Pattern[str]:
    return re.compile(re.escape(text))


def bytes_text(n: float | None) -> str:
    """``524288`` -> ``"512.0 KiB"``; ``"? bytes"`` when unknown."""
    return format_bytes(n, missing="? bytes")


us_text = format_us
