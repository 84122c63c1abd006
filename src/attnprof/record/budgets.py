"""A budgets verdict, kept in the record it judged: each budget checked at each measured
row it selects, and the budgets that selected nothing this run measured."""

from __future__ import annotations

import msgspec

from attnprof.record.check import CheckRow

__all__ = ["BudgetReport", "UnmatchedBudget"]


class UnmatchedBudget(msgspec.Struct, frozen=True, kw_only=True):
    """A budget of the file that selects nothing in the record: not checked."""

    #: Its position in the file (1-based).
    number: int
    description: str


class BudgetReport(msgspec.Struct, kw_only=True):
    """One row per (budget, workload, variant, metric) checked."""

    rows: list[CheckRow]
    unmatched: list[UnmatchedBudget] = msgspec.field(default_factory=list)
    title: str | None = None
    #: The budgets file.
    source: str = ""

    @property
    def ok(self) -> bool:
        """Whether every check held (the command's exit status 1 when not)."""
        return all(r.ok for r in self.rows)
