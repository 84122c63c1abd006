"""Human-readable sizes, durations and messages, shared by findings, rows and renderers.

One definition, so a finding's "512.0 KiB" and the table beside it always agree.
"""

from __future__ import annotations

__all__ = ["counted", "format_bytes", "format_us", "one_line"]


def format_bytes(n: float | None, missing: str = "—") -> str:
    """``524288`` -> ``"512.0 KiB"`` (binary units, as allocators count)."""
    if n is None:
        return missing
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def format_us(us: float | None, missing: str = "—") -> str:
    """Microseconds in the unit a person reads them in (µs, ms or s; 3-4 digits)."""
    if us is None:
        return missing
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def counted(n: float, noun: str, plural: str | None = None) -> str:
    """``counted(1, "kernel")`` -> ``"1 kernel"``; ``2`` or ``0.5`` -> ``"... kernels"``."""
    return f"{n:g} {noun if n == 1 else (plural or noun + 's')}"


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (runs of white space folded), cut to ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
