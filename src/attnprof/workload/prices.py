"""What an hour of a machine costs, as the user says it: ``--price USD_PER_HOUR``, or a
prices file (TOML) named by ``--prices FILE`` or ``ATTNPROF_PRICES``::

    [prices]
    "NVIDIA H100 80GB HBM3" = 2.49   # a device name as the record shows it
    h100-sxm = 2.49                  # or a device of attnprof's table
    cpu = 0.05                       # or a device kind: cpu, cuda

Checked before anything is measured (and before torch is imported): a price that is not a
positive finite number, or a file that is not TOML or prices no device, is one
:class:`UsageError` line.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from attnprof.errors import UsageError
from attnprof.workload.problem import Workload

__all__ = ["PRICES_ENV", "find_price", "load_prices", "parse_price", "tokens_per_call",
           "usd_per_call"]

#: The environment variable naming a prices file.
PRICES_ENV = "ATTNPROF_PRICES"
_FIX = 'write [prices] with lines such as h100-sxm = 2.49 (US dollars per hour)'


def parse_price(flag: str, text: str | float) -> float:
    """A price in US dollars per hour: positive and finite."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UsageError(f"{flag} {text!r} is not a number; give US dollars per hour, "
                         "e.g. 2.5") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{flag} must be a positive number of US dollars per hour, got "
                         f"{text}")
    return value


def load_prices(path: str | os.PathLike[str], source: str) -> dict[str, float]:
    """The ``[prices]`` of the TOML file at ``path``, keys lower-cased; ``source`` names
    the file in errors ("prices file 'p.toml' (ATTNPROF_PRICES)")."""
    from attnprof.workload.toml_file import read_toml

    data = read_toml(Path(path), source, _FIX)
    table = data.get("prices")
    if not isinstance(table, dict) or not table:
        raise UsageError(f"{source} prices no device; {_FIX}")
    # true/false would read as 1.0/0.0: only numbers are prices
    return {str(name).strip().lower(): parse_price(f"{source}: {name} =",
                                                   repr(value) if isinstance(value, bool)
                                                   else value)
            for name, value in table.items()}


def find_price(prices: dict[str, float], names: list[str]) -> tuple[str, float] | None:
    """The first of ``names`` (most specific first: the device's name, the table's name
    for it, its kind) the prices hold, and its price; ``None`` when none is priced."""
    for name in names:
        key = name.strip().lower()
        if key in prices:
            return name, prices[key]
    return None


def tokens_per_call(workload: Workload) -> int:
    """Tokens one measured call processes: the batch's full sequences in ``forward``
    (prefill) and ``forward+backward`` (tokens trained), one new token per sequence in
    ``decode``."""
    return workload.batch * workload.q_len


def usd_per_call(usd_per_hour: float, median_ms: float) -> float:
    """The price of one call's median latency: the machine is rented whole, so cost
    follows wall time."""
    return usd_per_hour / 3600.0 * median_ms / 1e3
