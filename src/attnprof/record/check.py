"""The outcome of ``attnprof check`` (kind ``check``): each expectation beside what was
observed, the trace report it was read from, and the verdict."""

from __future__ import annotations

from typing import Any

import msgspec

from attnprof.record.base import Listing, RecordBase
from attnprof.record.environment import Environment
from attnprof.record.trace_report import TraceReport
from attnprof.workload.problem import Workload

__all__ = ["CHECK_COLUMNS", "CheckRecord", "CheckRow", "check_lines"]


class CheckRow(msgspec.Struct, frozen=True):
    """One expectation: what was expected, what was observed, and whether it held."""

    what: str
    expected: str
    observed: str
    ok: bool
    detail: str = ""


#: The check's flat table: one line per expectation.
CHECK_COLUMNS = ("what", "expected", "observed", "ok", "detail", "region", "target",
                 "expectations", "created")


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

    def flat_table(self) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
        """The flat table (:mod:`attnprof.record.flat`): one line per expectation."""
        return CHECK_COLUMNS, check_lines(self)

    def headline(self) -> str:
        """How many expectations held, and the first that did not."""
        failed = [r for r in self.rows if not r.ok]
        said = f"{len(self.rows) - len(failed)} of {len(self.rows)} expectations held"
        if not failed:
            return said + "."
        return said + f"; {failed[0].what}: expected {failed[0].expected}, " \
                      f"observed {failed[0].observed}."

    def subject(self) -> str:
        """The expectations file and what they were checked on."""
        return f"{self.expectations} on {self.target}"

    def listing(self) -> Listing:
        """What was checked and how many expectations held."""
        held = sum(r.ok for r in self.rows)
        return Listing(summary=f"{self.target}: {held} of {len(self.rows)} expectations hold")


def check_lines(record: CheckRecord) -> list[dict[str, Any]]:
    """A check: one line per expectation."""
    shared = {"region": record.region, "target": record.target,
              "expectations": record.expectations, "created": record.created}
    return [{"what": r.what, "expected": r.expected, "observed": r.observed, "ok": r.ok,
             "detail": r.detail, **shared} for r in record.rows]
