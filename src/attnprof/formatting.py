"""Human-readable sizes, durations and messages, shared by findings, rows and renderers.

One definition, so a finding's "512.0 KiB" and the table beside it always agree; and one
definition of what text from outside (trace, user, record) may reach a terminal as is
(:func:`safe_text`).
"""

from __future__ import annotations

import unicodedata

__all__ = ["NAME_LIMIT", "counted", "fmt_ms", "fmt_rate", "format_bytes", "format_share",
           "format_us", "one_line", "safe_text", "threads_text"]

#: Characters of one string from outside that a terminal view shows; the JSON keeps all.
#: Longer than any reason or evidence line attnprof writes (``one_line`` cuts at 400),
#: far shorter than the 5,000-character C++ kernel names real traces hold.
NAME_LIMIT = 400
#: Unicode categories that move the cursor, reorder or hide text instead of showing a
#: glyph: C0/C1 controls (ESC, newline, NUL, ...), format characters (bidi overrides,
#: zero-width marks), unpaired surrogates (which cannot even be encoded), line and
#: paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


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


def fmt_ms(value: float | None) -> str:
    """Milliseconds as a table column shows them, the unit in its header: 3 decimals under
    10 ms, 2 under 1,000, none above (``0.123``, ``12.35``, ``1234``)."""
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.2f}" if value < 1000 else f"{value:.0f}"


def fmt_rate(value: float | None, digits: int = 3) -> str:
    """A rate (TFLOP/s, GB/s) to ``digits`` significant digits, the unit in its header."""
    if value is None:
        return "—"
    return f"{value:.{digits}g}"


def format_share(value: float | None, digits: int = 0, missing: str = "—") -> str:
    """A share as a percentage: ``0.4567`` -> ``"46%"`` (``digits=1``: ``"45.7%"``)."""
    return missing if value is None else f"{value:.{digits}%}"


def counted(n: float, noun: str, plural: str | None = None) -> str:
    """``counted(1, "kernel")`` -> ``"1 kernel"``; ``2`` or ``0.5`` -> ``"... kernels"``."""
    return f"{n:g} {noun if n == 1 else (plural or noun + 's')}"


def threads_text(threads: int, cpus: int | None) -> str:
    """The threads a run measured on, and the CPUs it left idle where it did:
    ``"1 thread (2 CPUs: --threads all uses every one)"``."""
    text = counted(threads, "thread")
    if cpus is not None and threads < cpus:
        text += f" ({counted(cpus, 'CPU')}: --threads all uses every one)"
    elif cpus is not None and threads > cpus:
        text += f" (more than the {counted(cpus, 'CPU')}: they take turns)"
    return text


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (runs of white space folded), cut to ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def safe_text(text: str, limit: int | None = NAME_LIMIT) -> str:
    """``text`` made harmless for a terminal: every control or format character shown as
    an escape (``\\x1b``, ``\\n``, ``\\u202e``) instead of acting on the terminal, so a name
    from a trace or a user can neither colour, move the cursor, forge table lines, nor
    reorder what follows; cut to ``limit`` characters (``None``: whole)."""
    if not text.isprintable():  # the rare slow path: printable text passes through
        text = "".join(_escape(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c
                       for c in text)
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def _escape(char: str) -> str:
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
