"""Times a user gives to filter runs: ``2026-11-30``, ``2026-11-30T10:00``, or an age such
as ``7d``, ``12h``, ``30m``, ``2w`` (that long ago), as the UTC ISO text runs are stored
with."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from attnprof.errors import UsageError

__all__ = ["parse_when"]

_AGE = re.compile(r"^\s*(\d{1,6})\s*([mhdw])\s*$")
_UNIT = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(flag: str, text: str, now: datetime | None = None) -> str:
    """``text`` as a UTC ISO 8601 time to the second; :class:`UsageError` naming ``flag``."""
    now = now or datetime.now(timezone.utc)
    age = _AGE.match(text)
    try:
        if age:
            when = now - timedelta(**{_UNIT[age.group(2)]: int(age.group(1))})
        else:
            when = datetime.fromisoformat(text.strip())
            if when.tzinfo is None:  # a date or time without a zone: UTC, as runs are
                when = when.replace(tzinfo=timezone.utc)  # stored
        return when.astimezone(timezone.utc).isoformat(timespec="seconds")
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not a date; give e.g. 2026-11-30, "
                         "2026-11-30T10:00 or an age such as 7d, 12h, 30m") from None
    except OverflowError:  # 999999w ago; year 1 (or 9999) moved to UTC: past datetime's range
        raise UsageError(f"{flag} {text!r} is outside the years 1 to 9999 (UTC) that dates "
                         "are read in; give e.g. 2026-11-30 or an age such as 7d") from None
