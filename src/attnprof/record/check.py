"""The outcome of ``attnprof check``: each expectation beside what was observed."""

from __future__ import annotations

import msgspec

__all__ = ["CheckRow"]


class CheckRow(msgspec.Struct, frozen=True):
    """One expectation: what was expected, what was observed, and whether it held."""

    what: str
    expected: str
    observed: str
    ok: bool
    detail: str = ""
