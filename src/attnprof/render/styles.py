"""Colours by meaning, shared by every terminal renderer: a status or a severity reads the
same in the comparison, the sweep, the model view and the trace report."""

from __future__ import annotations

__all__ = ["SEVERITY_STYLE", "STATUS_STYLE"]

#: A finding's severity.
SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
#: A row's status (compare, sweep, model runs).
STATUS_STYLE = {"ok": "green", "unsupported": "yellow", "error": "red", "oom": "magenta",
                "crashed": "bold red", "timeout": "magenta", "skipped": "dim"}
