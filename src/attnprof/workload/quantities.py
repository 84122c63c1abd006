"""Quantities a person types: memory sizes (``8GiB``), durations (``5ms``), percentages
(``5%``).

Pure parsing; every mistake is a :class:`UsageError` naming the flag, the text and the
accepted forms. Sizes with an ``i`` (``KiB``, ``MiB``, ``GiB``) and without (``KB``, ``MB``,
``GB``, ``K``, ``M``, ``G``) are both binary, as allocators and ``nvidia-smi`` count: a
memory budget written ``8GB`` means the same 8 GiB a person reading a GPU's spec means.
"""

from __future__ import annotations

import math
import re

from attnprof.errors import UsageError

__all__ = ["parse_bytes", "parse_ms", "parse_percent", "parse_seconds"]

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_BYTES = re.compile(r"^\s*(?P<number>[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*"
                    r"(?P<unit>[kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_TIME = re.compile(r"^\s*(?P<number>[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*"
                   r"(?P<unit>us|µs|ms|s|min)?\s*$", re.IGNORECASE)
_TIME_MS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "min": 60e3}
_PERCENT = re.compile(r"^\s*(?P<sign>[-+]?)(?P<number>[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*%?\s*$",
                      re.IGNORECASE)


def parse_percent(flag: str, text: str) -> float:
    """``"5"`` or ``"5%"`` -> ``5.0``: a finite percentage, zero or more."""
    match = _PERCENT.match(text)
    value = float(match["number"]) if match else math.nan
    if match and match["sign"] == "-" and value != 0:
        value = math.nan  # "-0" is zero, as "zero or more" says; "-5" is not a percentage
    if not math.isfinite(value):
        raise UsageError(f"{flag} {text!r} is not a percentage; write e.g. 5 or 5% (zero "
                         "or more)")
    return abs(value)  # -0.0 prints as "-0"


def parse_bytes(flag: str, text: str) -> int:
    """``"8GiB"`` -> ``8589934592``; a bare number is bytes."""
    match = _BYTES.match(text)
    if match is None:
        raise UsageError(f"{flag} {text!r} is not a memory size; write e.g. 8GiB, 512MiB or "
                         "1073741824 (bytes)")
    value = float(match["number"]) * _UNITS[match["unit"].lower()]
    if not math.isfinite(value) or value < 1:
        raise UsageError(f"{flag} {text!r} must be a positive memory size; write e.g. 8GiB")
    return int(value)


def parse_ms(flag: str, text: str) -> float:
    """``"5ms"``, ``"0.5s"``, ``"250us"`` -> milliseconds; a bare number is milliseconds."""
    return _duration(flag, text, default_unit="ms")


def parse_seconds(flag: str, text: str) -> float:
    """``"90"``, ``"2min"``, ``"500ms"`` -> seconds; a bare number is seconds."""
    return _duration(flag, text, default_unit="s") / 1e3


def _duration(flag: str, text: str, default_unit: str) -> float:
    match = _TIME.match(text)
    if match is None:
        raise UsageError(f"{flag} {text!r} is not a duration; write e.g. 5ms, 0.5s or 250us "
                         f"(a bare number is {default_unit})")
    unit = (match["unit"] or default_unit).lower()
    value = float(match["number"]) * _TIME_MS[unit]
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{flag} {text!r} must be a positive, finite duration")
    return value
