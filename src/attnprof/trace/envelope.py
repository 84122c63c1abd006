"""The JSON object around ``traceEvents``: the keys before the event list (the header) and
after it (the trailer), walked as a stream in bounded memory.

torch.profiler's header and trailer are a few KiB (``schemaVersion``, ``deviceProperties``,
``distributedInfo``, ``traceName``), but other writers put large blocks there — a 119 MB
``stackFrames`` before the events — so neither is held whole. The object is walked key by
key, and ``"traceEvents"`` is found wherever it is:

* a kept key's value (:data:`~attnprof.trace.schema.HEADER_KEYS`) is decoded when it is at
  most :data:`_KEPT_BYTES`, and left out when larger, or unreadable, or nested deeper
  than these small blocks ever are (the report embeds them, and encoding is recursive);
* every other value is checked and skipped: validated by msgspec (as ``Raw``, building
  nothing) when it is at most :data:`_CHECKED_BYTES`, else followed through its strings
  and brackets as it is read, one buffer of text at a time, so only its structure is
  checked: attnprof never holds more of a value it does not read than that.

A second ``"traceEvents"`` list after the first is not read: JSON parsers differ on which of
two equal keys counts, and the first is the one attnprof has read. Its entries are counted,
and the report says they were left out.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import msgspec
import numpy as np

from attnprof.trace.schema import HEADER_KEYS
from attnprof.trace.source import Source, TextBuffer

__all__ = ["read_header", "read_trailer"]

# A value attnprof does not read is validated whole up to this size, skipped by its
# structure beyond it. A kept value larger than _KEPT_BYTES is left out.
_CHECKED_BYTES = 16 << 20
_KEPT_BYTES = 16 << 20
_KEY_BYTES = 1 << 20  # a longer key is none attnprof reads: skipped, not decoded
_SKIM_BYTES = 1 << 20  # text followed in numpy at once: bounds its temporary arrays
_MAX_HEADER_DEPTH = 32  # kineto's deviceProperties and distributedInfo nest 2 levels
_KEY = "traceEvents"
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark some editors add

_NON_WS = re.compile(rb"[^ \t\r\n]")
# A value's first byte: a whole string, or a lone quote (a string that runs past the text
# read so far), or a container's opening bracket.
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|["\[{]', re.DOTALL)
# Inside a string, from after its opening quote: up to its closing quote or the text's end.
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_SCALAR_END = re.compile(rb"[ \t\r\n,\]}]")
_QUOTE, _COMMA = 0x22, 0x2C


def read_header(src: Source, text: TextBuffer) -> tuple[dict[str, Any], bool]:
    """Kept header keys and whether the trace is a bare list; leaves ``text.start`` right
    after the ``[`` that opens the events.

    Handles both Chrome layouts: ``{..., "traceEvents": [...], ...}`` and a bare ``[...]``.
    """
    walk = _Walk(src, text)
    text.fill(len(_BOM))
    if text.buf[text.start : text.start + len(_BOM)] == _BOM:
        text.start += len(_BOM)
    opening = walk.peek()
    if opening < 0:
        raise src.empty()
    if opening == ord("["):
        text.start += 1
        return {}, True
    if opening != ord("{"):
        raise src.not_a_trace()
    text.start += 1
    fields: dict[str, Any] = {}
    if walk.peek() == ord("}"):
        raise src.not_a_trace()
    while True:
        key = walk.key()
        if key == _KEY:
            if walk.peek() != ord("["):
                raise src.not_a_trace('its "traceEvents" entry is not a list')
            text.start += 1
            return fields, False
        _keep(fields, key, walk)
        if not walk.more_keys():
            raise src.not_a_trace()


def read_trailer(src: Source, text: TextBuffer, bare: bool) -> tuple[dict[str, Any], int]:
    """The kept keys after the event list (``text.start`` just after its ``]``), and how
    many entries a second ``"traceEvents"`` list holds (not read); reads to the end."""
    walk = _Walk(src, text)
    fields: dict[str, Any] = {}
    extra = 0
    if bare:
        if walk.peek() >= 0:
            raise src.malformed("there is data after the event list", walk.offset)
        return fields, extra
    after = walk.peek()
    if after == _COMMA:
        while walk.more_keys():
            key = walk.key()
            if key == _KEY:
                extra += walk.entries()
            else:
                _keep(fields, key, walk)
    elif after == ord("}"):
        text.start += 1
    else:
        raise src.malformed("the object holding traceEvents is not closed", walk.offset)
    if walk.peek() >= 0:
        raise src.malformed("there is data after the object holding traceEvents",
                            walk.offset)
    return fields, extra


def _keep(fields: dict[str, Any], key: str | None, walk: _Walk) -> None:
    """Read the value of ``key``, into ``fields`` if it is a kept key: a value msgspec cannot
    read (a number beyond float range) is left out, and so is one larger than
    :data:`_KEPT_BYTES` or nested deeper than these blocks are."""
    if key not in HEADER_KEYS:
        walk.value()
        return
    raw, _ = walk.value(_KEPT_BYTES)
    if raw is None:
        return
    with contextlib.suppress(msgspec.DecodeError):
        if _depth(value := msgspec.json.decode(raw)) <= _MAX_HEADER_DEPTH:
            fields[key] = value


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and dicts (0 for a scalar), without recursion."""
    depth, level = 0, [value]
    while True:
        containers = [x for x in level if isinstance(x, (list, dict))]
        if not containers:
            return depth
        depth += 1
        level = [v for x in containers for v in (x.values() if isinstance(x, dict) else x)]


class _Walk:
    """Reads JSON tokens at ``text.start``, reading more text as needed; every method
    leaves ``text.start`` after what it read."""

    def __init__(self, src: Source, text: TextBuffer) -> None:
        self.src, self.text = src, text

    @property
    def offset(self) -> int:
        """Where ``text.start`` is in the JSON text."""
        return self.text.base + self.text.start

    def peek(self) -> int:
        """The next byte that is not whitespace (``text.start`` moved to it), -1 at the end."""
        t = self.text
        while True:
            found = _NON_WS.search(t.buf, t.start, t.end)
            if found is not None:
                t.start = found.start()
                return t.buf[t.start]
            t.start = t.end
            if t.src.eof:
                return -1
            t.fill(t.src.chunk_bytes)

    def more_keys(self) -> bool:
        """After a value: True at ``,`` (consumed), False at the object's ``}`` (consumed)."""
        after = self.peek()
        if after < 0:
            raise self.src.malformed("the file ends inside an object (truncated JSON)",
                                     self.offset)
        self.text.start += 1
        if after == _COMMA:
            return True
        if after == ord("}"):
            return False
        raise self.src.malformed("expected ',' or '}' after a value", self.offset - 1)

    def key(self) -> str | None:
        """A key and its colon; None for a key too long to be one attnprof reads, or one
        that is not text."""
        if self.peek() != _QUOTE:
            raise self.src.malformed("expected a key (a string)", self.offset)
        raw, _ = self.value(_KEY_BYTES)
        name = None
        if raw is not None:
            with contextlib.suppress(msgspec.DecodeError):
                name = msgspec.json.decode(raw, type=str)
        if self.peek() != ord(":"):
            raise self.src.malformed("expected ':' after a key", self.offset)
        self.text.start += 1
        self.peek()
        return name

    def entries(self) -> int:
        """The number of entries of the list at ``text.start`` (0 if it is no list)."""
        is_list = self.peek() == ord("[")
        raw, commas = self.value()
        if not is_list:
            return 0
        if raw is None:  # larger than _CHECKED_BYTES: not empty
            return commas + 1
        return len(msgspec.json.decode(raw, type=list[msgspec.Raw]))

    def value(self, keep: int | None = None) -> tuple[bytes | None, int]:
        """One JSON value at ``text.start`` (which :meth:`peek` has found): its text when it
        is at most ``keep`` bytes (:data:`_CHECKED_BYTES`; validated), else None (skipped by
        its structure); and the commas directly inside it (entries - 1 of a non-empty list)."""
        keep = _CHECKED_BYTES if keep is None else keep
        t, src = self.text, self.src
        first = i = t.start
        held = True  # the value's text stays in the buffer while it may be returned
        depth = commas = 0
        window = 1 << 10
        in_string = False
        scalar = t.buf[i] not in b'"[{'
        while True:
            buf, end = t.buf, t.end
            if scalar:
                found = _SCALAR_END.search(buf, i, end)
                if found is not None:
                    i = found.start()
                    break
                i = end
            elif in_string:
                j = _STRING_REST.match(buf, i, end).end()  # type: ignore[union-attr]
                if j < end and buf[j] == _QUOTE:
                    i, in_string = j + 1, False
                    if not depth:
                        break
                    continue
                i = j  # the text's end, or a backslash there whose escape is not read yet
            elif depth:  # inside a container: its structure, a slice at a time, in numpy
                # (from a small slice up: most values are small, and each slice costs a few
                # passes over all of it)
                upto = min(end, i + window)
                window = min(2 * window, _SKIM_BYTES)
                i, depth, inner = _skim(buf, i, upto, depth)
                commas += inner
                if not depth:
                    break
                if i < upto:  # at a string the slice does not finish
                    in_string, i = True, i + 1
                if i < end:
                    continue
            else:  # the value's first byte: a string or a container
                found = _STRUCTURE.match(buf, i, end)
                if found is not None:
                    i = found.end()
                    if buf[found.start()] != _QUOTE:
                        depth = 1
                    elif i - found.start() > 1:  # a whole string
                        break
                    else:
                        in_string = True
                    continue
                i = end
            # Out of text: read more, holding the value only while it may be returned.
            if src.eof:
                raise src.malformed("the file ends inside a value (truncated JSON)",
                                    t.base + end)
            if held and i - first > keep:
                held = False
            if not held:
                first = t.start = i
            moved = t.fill(t.end - t.start + src.chunk_bytes)
            i, first = i - moved, first - moved
        t.start = i
        if not held:
            return None, commas
        raw = bytes(t.buf[first:i])
        try:
            msgspec.json.decode(raw, type=msgspec.Raw)  # the whole grammar, nothing built
        except msgspec.DecodeError as e:
            raise src.malformed(f"invalid JSON ({e})", t.base + first) from None
        return raw, commas


def _skim(buf: bytearray, i: int, end: int, depth: int) -> tuple[int, int, int]:
    """Follow the text ``buf[i:end]``, outside any string and ``depth`` brackets deep, by
    its structure, in numpy: (where it stopped, the depth there, the commas at depth 1).

    It stops after the bracket that closes the value (depth 0), else at the text's end, or
    at the opening quote of a string that the text read so far does not finish. Quotes
    escaped by an odd run of backslashes are not quotes; brackets in strings do not count.
    Bracket kinds are not matched (a value this large is not decoded: its structure is
    what is checked).
    """
    data = np.frombuffer(buf, np.uint8, count=end - i, offset=i)
    quotes = np.flatnonzero(data == _QUOTE)
    if len(quotes) and buf.find(b"\\", i, end) >= 0:
        quotes = quotes[[not _escaped(buf, i + int(q)) for q in quotes.tolist()]]
    stop = len(data)
    if len(quotes) % 2:  # the last string runs past the text read so far
        stop = int(quotes[-1])
        quotes, data = quotes[:-1], data[:stop]
    flips = np.zeros(stop, np.uint8)
    flips[quotes] = 1
    outside = np.bitwise_xor.accumulate(flips) == 0  # (a closing quote reads as outside)
    steps = (data == 0x5B).view(np.int8) + (data == 0x7B).view(np.int8)
    steps -= (data == 0x5D).view(np.int8) + (data == 0x7D).view(np.int8)
    steps[~outside] = 0
    levels = depth + np.cumsum(steps, dtype=np.int64)
    closed = np.flatnonzero(levels <= 0)
    if len(closed):
        stop = int(closed[0]) + 1  # just after the bracket that closes the value
        levels, data, outside = levels[:stop], data[:stop], outside[:stop]
    commas = int(np.count_nonzero((data == _COMMA) & outside & (levels == 1)))
    return i + stop, int(levels[-1]) if stop else depth, commas


def _escaped(buf: bytearray, at: int) -> bool:
    """Whether the quote at ``buf[at]`` follows an odd run of backslashes."""
    run = 0
    while at - run > 0 and buf[at - run - 1] == 0x5C:
        run += 1
    return run % 2 == 1
