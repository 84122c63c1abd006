"""A finding: a problem a rule recognised in a trace, with the evidence and the fix.

Its own module so that every record that carries findings (trace reports, model
attributions) shares one definition; :mod:`attnprof.record.trace_report` re-exports it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = ["Finding", "Severity"]

Severity = Literal["info", "warning", "critical"]


class Finding(msgspec.Struct, kw_only=True):
    """A problem a rule recognised, with the evidence and the fix."""

    rule: str
    severity: Severity
    title: str
    evidence: list[str]
    fix: str
    region: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)
