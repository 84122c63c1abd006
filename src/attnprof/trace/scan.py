"""The loader's fast path: the C scanner (``_scan.c``) and the ids of the texts it interns.

``_scan.Scanner.scan(data)`` reads one batch of events (``[event, ...]``) in C into one
column per field (:meth:`Scanner.scan` views them as numpy arrays), and returns None for a
batch it does not reproduce exactly (\\u escapes, ints of more than 18 digits, string
streams, ...); the loader then decodes that batch with msgspec, as it does
every batch when the extension is missing (a build without a C compiler) or
``ATTNPROF_PURE_PYTHON_LOADER=1`` is set. Either way the table is the same: the tests load
every trace both ways.

The scanner interns strings by their JSON text (``"aten::mm"`` with its quotes) and the
"Input Dims"/"Input type" values by their raw text; :class:`TokenIds` turns those token ids
into the :class:`~attnprof.trace.builder.TableBuilder`'s string ids, decoding each token
once, and only in the meaning a column uses it in (a name is decoded JSON, a raw value is
kept as written), so the string table holds exactly what the msgspec path would put there.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable

import msgspec
import numpy as np

try:
    from attnprof.trace import _scan  # type: ignore[attr-defined]
except ImportError:  # installed without a C compiler: msgspec reads every batch
    _scan = None

__all__ = [
    "F_ALLOC",
    "F_BLOCK",
    "F_COPY",
    "F_SORT",
    "F_TOTAL",
    "F_TS_INT",
    "TEXT_EXACT_ABOVE",
    "Scanner",
    "TokenIds",
    "needs_text",
    "new_scanner",
]

# Opting out is for bisecting a suspected fast-path difference; the result must not change.
PURE_PYTHON_ENV = "ATTNPROF_PURE_PYTHON_LOADER"

if _scan is not None:
    # (name, offset in the C record, numpy type): field f's column starts at n * offset.
    _FIELDS: tuple[tuple[str, int, str], ...] = _scan.FIELDS
    F_TS_INT, F_BLOCK = _scan.F_TS_INT, _scan.F_BLOCK
    F_ALLOC, F_COPY, F_TOTAL, F_SORT = _scan.F_ALLOC, _scan.F_COPY, _scan.F_TOTAL, _scan.F_SORT
else:
    _FIELDS = ()
    F_TS_INT, F_BLOCK, F_ALLOC, F_COPY, F_TOTAL, F_SORT = 2, 4, 8, 16, 32, 64


def new_scanner() -> Scanner | None:
    """A fresh scanner for one trace, or None when batches are to be read by msgspec."""
    if _scan is None or os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    return Scanner()


# Room for the columns of ~30k events (_scan.RECORD_SIZE, 272 bytes, each): a 1 MiB batch
# holds 3k-10k. A larger batch gets fresh memory from the scanner instead.
_OUT_BYTES = 8 << 20


class Scanner:
    """The C scanner and the memory its columns are written into, reused batch after batch
    (anonymous map: pages are faulted in once, not per batch)."""

    def __init__(self) -> None:
        self._c = _scan.Scanner()
        self._out = mmap.mmap(-1, _OUT_BYTES)

    @property
    def tokens(self) -> list[bytes]:
        """Each token id's JSON text (grows as batches bring new ones)."""
        return self._c.tokens

    def scan(self, data: bytes | memoryview, *, body: bool = False
             ) -> dict[str, np.ndarray] | None:
        """The columns of one batch by field name (``grid`` and ``block`` are ``(n, 3)``),
        or None when msgspec must read it. ``data`` is a JSON array of events, or with
        ``body`` its elements without the brackets. The arrays are views valid until the
        next call: the caller copies what it keeps before scanning again."""
        found = self._c.scan(data, self._out, body)
        if found is None:
            return None
        n, buf = found
        columns = {}
        for name, offset, kind in _FIELDS:
            width = 3 if kind.startswith("(3,)") else 1
            column = np.frombuffer(buf, dtype=kind[4:] if width == 3 else kind,
                                   count=n * width, offset=n * offset)
            columns[name] = column.reshape(n, 3) if width == 3 else column
        return columns


#: From 2**43 µs (about 100 days) a float64 stamp is no longer within half a nanosecond of
#: its text: TableBuilder reads such stamps from the text, which the loader then keeps.
TEXT_EXACT_ABOVE = float(2**43)


def needs_text(columns: dict[str, np.ndarray]) -> bool:
    """Whether a batch has float stamps that only the JSON text gives exactly."""
    floats = (columns["flags"] & F_TS_INT) == 0
    return bool((np.abs(columns["ts_f"][floats]) >= TEXT_EXACT_ABOVE).any())


_UNKNOWN = -2  # a token not yet given an id in this meaning


class TokenIds:
    """String ids of a scanner's tokens, per meaning (decoded text, or raw JSON text)."""

    def __init__(self, tokens: list[bytes]) -> None:
        self.tokens = tokens
        # One slot per token plus a last one for the absent id -1, which maps to itself.
        self._maps = {"text": _fresh(0), "raw": _fresh(0)}

    def text(self, token: int) -> str | None:
        """The string one token spells (None for -1: absent), decoded, not interned."""
        return None if token < 0 else msgspec.json.decode(self.tokens[token], type=str)

    def texts(self, ids: np.ndarray, intern: Callable[[str], int]) -> np.ndarray:
        """String ids of JSON string tokens (``-1``, absent, stays ``-1``)."""
        return self._lookup("text", ids, lambda t: intern(msgspec.json.decode(t, type=str)))

    def raws(self, ids: np.ndarray, intern_raw: Callable[[bytes], int]) -> np.ndarray:
        """String ids of raw JSON texts, as :meth:`TableBuilder._intern_raw` assigns them."""
        return self._lookup("raw", ids, intern_raw)

    def _lookup(self, meaning: str, ids: np.ndarray, make: Callable[[bytes], int]) -> np.ndarray:
        table = self._maps[meaning]
        if len(table) <= len(self.tokens):
            grown = _fresh(max(len(self.tokens), 2 * (len(table) - 1)))
            grown[: len(table) - 1] = table[:-1]
            self._maps[meaning] = table = grown
        found = table[ids]
        missing = ids[found == _UNKNOWN]
        if missing.size:
            for token in set(missing.tolist()):  # few: each token is new once
                table[token] = make(self.tokens[token])
            found = table[ids]
        return found


def _fresh(size: int) -> np.ndarray:
    table = np.full(size + 1, _UNKNOWN, dtype=np.int32)
    table[-1] = -1
    return table
