"""A finding: a problem a rule recognised in a trace, with the evidence and the fix.

Its own module so that every record that carries findings (trace reports, model
attributions) shares one definition; :mod:`attnprof.record.trace_report` re-exports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import msgspec

__all__ = ["Finding", "Severity", "top_finding"]

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


_SEVERITY = {"critical": 0, "warning": 1, "info": 2}


def top_finding(findings: Sequence[tuple[str, Finding]]) -> str:
    """``"Top finding (warning, where): title."``: the first of the most severe of
    ``findings`` (where, finding) pairs; ``""`` for none."""
    if not findings:
        return ""
    where, first = min(findings, key=lambda pair: _SEVERITY.get(pair[1].severity, 3))
    more = f" ({len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"Top finding ({first.severity}, {where}): {first.title.rstrip('.')}.{more}"
