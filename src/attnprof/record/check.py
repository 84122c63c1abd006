"""The outcome of ``attnprof check`` (kind ``check``): each expectation beside what was
observed, the trace report it was read from, and the verdict."""

from __future__ import annotations

import msgspec

from attnprof.record.base import RecordBase
from attnprof.record.environment import Environment
from attnprof.record.trace_report import TraceReport
from attnprof.spec.workload import Workload

__all__ = ["CheckRecord", "CheckRow"]


class CheckRow(msgspec.Struct, frozen=True):
    """One expectation: what was expected, what was observed, and whether it held."""

    what: str
    expected: str
    observed: str
    ok: bool
    detail: str = ""


class CheckRecord(RecordBase, tag="check"):
    """``attnprof check --expect FILE TARGET``: one row per expectation."""

    #: The expectations file (its title below).
    expectations: str
    #: What was checked: the trace file, or the variant measured now (with its workload).
    target: str
    source: str
    region: str
    title: str | None = None
    rows: list[CheckRow] = msgspec.field(default_factory=list)
    #: The analysis the rows were read from (its findings, kernels and timeline).
    report: TraceReport | None = None
    workload: Workload | None = None
    environment: Environment | None = None

    @property
    def ok(self) -> bool:
        """Whether every expectation held (the command's exit status 0)."""
        return all(r.ok for r in self.rows)
