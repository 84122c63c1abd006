"""The price a run's costs are computed at, kept in its record (``compare --price``)."""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = ["Price"]


class Price(msgspec.Struct, kw_only=True, frozen=True):
    """US dollars per hour of the machine that ran the record, and where it came from
    (``--price``, or the prices file and the entry that matched)."""

    usd_per_hour: Annotated[float, msgspec.Meta(gt=0)]
    source: str
