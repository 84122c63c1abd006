"""attnprof's own trace annotations: how a captured step is labelled, so that any later
reader (the analysis, ``check``) finds "one forward of variant X" in the trace."""

from __future__ import annotations

__all__ = ["REGION_PREFIX", "region_name"]

#: Every step attnprof captures runs inside ``record_function(REGION_PREFIX + variant)``.
REGION_PREFIX = "attnprof::"


def region_name(variant: str) -> str:
    """The ``record_function`` label of one step of ``variant``."""
    return f"{REGION_PREFIX}{variant}"
