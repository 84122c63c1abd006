"""Stream a torch.profiler Chrome trace (``.json`` or ``.json.gz``) into a :class:`Trace`.

Peak memory is bounded by ``chunk_bytes`` plus the columnar output, never the whole file
nor its decoded JSON: the (decompressed) text is read into a buffer of about ``chunk_bytes``,
the ``traceEvents`` array is cut at event boundaries into batches of at most 1 MiB, and
each batch is decoded by msgspec straight into :mod:`attnprof.trace.schema` structs and
turned into numpy columns (:class:`~attnprof.trace.builder.TableBuilder`) before the next.

Finding a boundary without a JSON tokenizer in Python: a cut goes right after a ``}`` that is
followed by optional whitespace and ``,``, and the text from the previous cut to it is decoded
as ``[`` + piece + ``]``. A piece always starts at a true event start, so the decode can only
succeed when the cut is a true event end: a cut inside a string leaves the string open, one
inside a nested object leaves it unclosed. msgspec says where it failed: at the very end means
"wrong cut, try an earlier ``}``"; before the end, the file itself is malformed; "trailing
characters" means the piece ran past the ``]`` closing ``traceEvents``, which is how the end
of the array is found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from attnprof.errors import UsageError
from attnprof.trace import scan
from attnprof.trace.builder import TableBuilder
from attnprof.trace.envelope import read_header, read_trailer
from attnprof.trace.schema import NO_RAW, Event, LooseEvent, RawTs, loose_by_field, to_event
from attnprof.trace.source import WS, Source, TextBuffer
from attnprof.trace.table import DistributedInfo, Trace, TraceMeta

__all__ = ["load_trace"]

# Decode granularity: bounds the Python objects alive at once (a few MiB of structs for
# 1 MiB of JSON). Each batch also pays a fixed cost (some 20 columns converted, narrowed and
# appended); 1 MiB loads v100_training_large 5% faster than 256 KiB, 2 MiB no faster again.
_BATCH_BYTES = 1 << 20
_MAX_TRIES = 8  # wrong cuts are rare; after this many, widen the window or read more
_MAX_EVENT_BYTES = 256 << 20  # no boundary in this much text: the file is broken
_BYTE_AT = re.compile(r"\(byte (\d+)\)")
# What a fault found inside a piece says (the piece's text is there, so the file is wrong).
_INVALID = {"bad": "invalid JSON", "utf8": "text that is not UTF-8"}

_strict = msgspec.json.Decoder(list[Event])
_raws = msgspec.json.Decoder(list[msgspec.Raw])
_loose = msgspec.json.Decoder(LooseEvent)
_raw_ts = msgspec.json.Decoder(list[RawTs])


# The text buffer's size. Small enough that text decompressed into it is decoded while still
# in the CPU caches: 4 MiB loads v100_training_large 5% faster than 16 MiB (and holds 12 MiB
# less); 2 MiB is no faster again.
DEFAULT_CHUNK_BYTES = 4 << 20


def load_trace(
    path: str | os.PathLike[str], *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    side_tables: bool = True,
) -> Trace:
    """Load a Chrome trace written by torch.profiler (or any Chrome trace-event JSON).

    ``path`` is a ``.json`` file or a gzip-compressed one (detected by content, not name),
    read ``chunk_bytes`` at a time. ``side_tables=False`` leaves out the kernel launch
    configurations and the memory records (``meta.side_tables`` says so), for a reader
    that needs neither: a distributed run's rank summary, where they were a seventh of
    reading a rank. Anything unusable in an otherwise valid trace (a
    wrong-typed field, an entry that is not an event) degrades to an absent value or a dropped
    row (``meta.n_dropped``); a file that cannot be read as a trace at all raises
    :class:`~attnprof.errors.UsageError` naming the file and the fix.
    """
    if type(chunk_bytes) is not int or chunk_bytes < 1:  # bool is not a size
        raise UsageError(
            f"chunk_bytes={chunk_bytes!r} is not a positive byte count; use e.g. 4 << 20"
        )
    src = Source(Path(path), chunk_bytes)
    try:
        text = TextBuffer(src)
        header, bare = read_header(src, text)
        scanner = scan.new_scanner()
        builder = TableBuilder(scanner.tokens if scanner is not None else None,
                               side_tables=side_tables)
        dropped = _read_events(text, builder, bare, scanner)
        trailer, second_list = read_trailer(src, text, bare)
        del text
        header.update(trailer)
    except RecursionError:
        # msgspec decodes (and skips) nested values recursively: thousands of levels of
        # arrays or objects end in Python's recursion limit. No profiler writes that.
        raise src.too_deep() from None
    finally:
        src.close()
    table, origin = builder.finish()
    _count(dropped, NO_PHASE, builder.n_no_phase)
    if len(table) == 0 and dropped:
        raise src.not_a_trace(
            f"no trace events: {sum(dropped.values())} entries of its event list are not "
            "events"
        )
    _count(dropped, SECOND_LIST, second_list)
    return Trace(events=table, meta=_meta(header, src.path, len(table), dropped, origin, builder))


#: Why entries of ``traceEvents`` are not rows (``TraceMeta.dropped_entries``).
NOT_AN_OBJECT = "not an object"
NO_PHASE = "no phase (ph)"
SECOND_LIST = "in a second traceEvents list"


def _count(counts: dict[str, int], reason: str, n: int = 1) -> None:
    if n:
        counts[reason] = counts.get(reason, 0) + n


# ---- the event array -------------------------------------------------------------------
class _Piece(msgspec.Struct):
    """A decodable JSON array of events: the C scanner's records, else the typed events if
    they typed, else neither (to be re-read loosely)."""

    data: bytes
    events: list[Event] | None
    # The scanner's columns: views into its output memory, fed before the next scan.
    records: dict[str, Any] | None = None


def _read_events(
    text: TextBuffer, builder: TableBuilder, bare: bool, scanner: scan.Scanner | None
) -> dict[str, int]:
    """Feed every event to ``builder``; return the entries dropped, by reason, and leave
    ``text.start`` right after the array.

    ``scanner`` (:func:`scan.new_scanner`), when there is one, reads each batch first; a batch
    it declines is decoded by msgspec as without it.
    """
    src = text.src
    batch = min(src.chunk_bytes, _BATCH_BYTES)
    dropped: dict[str, int] = {}
    while True:
        if text.end - text.start < batch:
            text.fill(src.chunk_bytes)
        buf, pos, end, base = text.buf, text.start, text.end, text.base
        found = None
        if not src.eof or end - pos > batch:
            found = _cut(src, buf, pos, min(pos + batch, end), end, base, scanner) or _cut(
                src, buf, pos, end, end, base, scanner
            )
        if found is None and src.eof:
            with memoryview(buf) as view:
                rest = bytes(view[pos:end])
            text.start += _last_piece(src, rest, base + pos, builder, dropped, bare, scanner)
            return dropped
        if found is None:
            # No boundary in what we hold: the next event is larger than the buffer.
            if end - pos > _MAX_EVENT_BYTES:
                raise src.malformed("no event boundary found", base + pos)
            text.fill(2 * (end - pos) + src.chunk_bytes)
            continue
        piece, next_pos, at_array_end = found
        _feed(piece, builder, dropped, src, base + pos - 1)
        text.start = next_pos
        if at_array_end:
            return dropped


def _cut(
    src: Source,
    buf: bytearray,
    pos: int,
    hi: int,
    end: int,
    base: int,
    scanner: scan.Scanner | None,
) -> tuple[_Piece, int, bool] | None:
    """Try the last few candidate cuts before ``hi``: (piece, next position, array ended)."""
    with memoryview(buf) as view:
        for tries, (close, comma) in enumerate(_candidates(buf, pos, hi, end)):
            if tries == _MAX_TRIES:
                return None
            if scanner is not None:
                scanned = _scanned(scanner, view[pos : close + 1])
                if scanned is not None:
                    return scanned, comma + 1, False
            data = b"".join((b"[", view[pos : close + 1], b"]"))
            piece, (kind, at) = _attempt(data)
            if piece is not None:
                return piece, comma + 1, False
            if kind == "array_end":
                piece, size = _array_end(src, data, at, base + pos, scanner)
                return piece, pos + size - 1, True
            if kind in _INVALID:
                raise src.malformed(_INVALID[kind], base + pos + at - 1)
    return None


def _scanned(scanner: scan.Scanner, body: memoryview) -> _Piece | None:
    """The batch ``body`` (events without the array's brackets) read by the scanner in place,
    or None. Its text is copied out only when the builder will need it (epoch-scale float
    stamps); msgspec's pieces need the brackets around a copy."""
    records = scanner.scan(body, body=True)
    if records is None:
        return None
    text = b"".join((b"[", body, b"]")) if scan.needs_text(records) else b""
    return _Piece(text, None, records)


def _candidates(buf: bytearray, lo: int, hi: int, end: int) -> Iterator[tuple[int, int]]:
    """(index of ``}``, index of the ``,`` after it) for candidate cuts, last first."""
    close = buf.rfind(b"}", lo, hi)
    while close >= 0:
        j = close + 1
        while j < end and buf[j] in WS:
            j += 1
        if j < end and buf[j] == 0x2C:  # ","
            yield close, j
        close = buf.rfind(b"}", lo, close)


def _attempt(
    data: bytes, scanner: scan.Scanner | None = None
) -> tuple[_Piece | None, tuple[str, int]]:
    """Decode ``data`` as one array of events, or say why not: ("cut", "bad", "utf8" or
    "array_end", and the byte).

    The scanner's records when it reads the batch (it accepts only valid JSON that msgspec
    would type); otherwise valid JSON whose events fail to type (a wrong-typed field) comes
    back with ``events=None``, to be re-read loosely.
    """
    if scanner is not None:
        records = scanner.scan(data)
        if records is not None:
            return _Piece(data, None, records), ("", 0)
    try:
        return _Piece(data, _strict.decode(data)), ("", 0)
    except msgspec.ValidationError:
        try:
            _raws.decode(data)  # typing stopped early: is the rest valid JSON?
            return _Piece(data, None), ("", 0)
        except msgspec.DecodeError as e:
            return None, _fault(e, data)
    except msgspec.DecodeError as e:
        return None, _fault(e, data)


def _fault(error: msgspec.DecodeError, data: bytes) -> tuple[str, int]:
    msg = str(error)
    size = len(data)
    if "UTF-8" in msg:  # msgspec names no byte: find it. Cuts never split a character.
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as bad:
            return "utf8", bad.start
    m = _BYTE_AT.search(msg)
    if m and "trailing characters" in msg:
        return "array_end", int(m.group(1))
    if m is None or int(m.group(1)) >= size - 1:  # ran into our closing "]" or off the end
        return "cut", size
    return "bad", int(m.group(1))


def _array_end(
    src: Source, data: bytes, at: int, offset: int, scanner: scan.Scanner | None
) -> tuple[_Piece, int]:
    """The events array that ends just before the trailing text msgspec found at ``at``.

    msgspec's offset for "trailing characters" is the offending byte or the one after it,
    depending on the case, so both readings are tried; the array is the one that decodes.
    """
    for end in (at, at - 1):
        text = data[:end].rstrip(WS)
        if text.endswith(b"]"):
            piece, _ = _attempt(text, scanner)
            if piece is not None:
                return piece, len(text)
    raise src.malformed("invalid JSON", offset)


def _last_piece(
    src: Source,
    rest: bytes,
    offset: int,
    builder: TableBuilder,
    dropped: dict[str, int],
    bare: bool,
    scanner: scan.Scanner | None,
) -> int:
    """At end of input: what is left (``rest``, at ``offset`` in the text) is the last
    events, ``]`` and the trailer. Returns where in ``rest`` the trailer starts."""
    close = _events_close(rest)
    if close is not None:
        # Where the events most likely end: read that array alone, once. It can only read
        # as an array of events if it is the events array (a JSON value ends where its
        # brackets close). If it does not (the scanner declines it: msgspec is not asked
        # too, as it would be bound to fail after typing every event), the whole rest is
        # tried, which finds the end.
        if scanner is None:
            piece, _ = _attempt(b"[" + rest[: close + 1])
        else:
            with memoryview(rest) as view:
                piece = _scanned(scanner, view[:close])
        if piece is not None:
            _feed(piece, builder, dropped, src, offset - 1)
            return close + 1
    data = b"[" + rest
    piece, (kind, at) = _attempt(data, scanner)
    if piece is not None:
        _feed(piece, builder, dropped, src, offset - 1)
        return len(rest)
    if kind == "array_end":
        piece, size = _array_end(src, data, at, offset, scanner)
        _feed(piece, builder, dropped, src, offset - 1)
        return size - 1
    if kind == "cut" and bare:
        # The bare-list format may omit its closing bracket (Chrome's rule); try that.
        body = data.rstrip(WS)
        piece, _ = _attempt((body[:-1] if body.endswith(b",") else body) + b"]", scanner)
        if piece is not None:
            _feed(piece, builder, dropped, src, offset - 1)
            return len(rest)
    if kind == "cut":
        raise src.malformed("the event list is cut off (truncated JSON)", offset + len(rest))
    raise src.malformed(_INVALID.get(kind, "invalid JSON"), offset + at - 1)


def _events_close(rest: bytes) -> int | None:
    """The ``]`` that most likely closes the events array in ``rest`` (the last events,
    the ``]`` and the trailer): the last one near the end that follows an event's ``}``
    and is followed by ``,`` or ``}``, as kineto writes them; a trailer of scalars,
    objects and lists of strings (its ``"INFO"`` lines) has none. None when no ``]``
    there looks like it."""
    lo = max(len(rest) - _TRAILER_BYTES, 0)
    close = rest.rfind(b"]", lo)
    while close > 0:
        before, after = close - 1, close + 1
        while before > 0 and rest[before] in WS:
            before -= 1
        while after < len(rest) and rest[after] in WS:
            after += 1
        if rest[before] == 0x7D and after < len(rest) and rest[after] in b",}":
            return close
        close = rest.rfind(b"]", lo, close)
    return None


#: How far from the end of the text the events' closing ``]`` is looked for: kineto's
#: trailer (its log lines, the trace's name) is a few KiB.
_TRAILER_BYTES = 64 << 10


def _feed(piece: _Piece, builder: TableBuilder, dropped: dict[str, int], src: Source,
          offset: int) -> None:
    """Add one decoded piece (``piece.data`` at ``offset`` in the text) to ``builder``,
    counting the entries dropped in ``dropped``, by reason."""
    data = piece.data
    if piece.records is not None:
        builder.add_records(piece.records, lambda: [r.ts for r in _raw_ts.decode(data)])
        return
    if piece.events is not None:
        builder.add(piece.events, lambda: [r.ts for r in _raw_ts.decode(data)])
        return
    # One event at a time: odd values become absent (and counted), entries that are not
    # events drop (and are counted); the same rules whatever the piece's other events are.
    events: list[Event] = []
    stamps: list[msgspec.Raw] = []
    written: tuple[list[bool], list[bool]] = ([], [])
    for raw in _raws.decode(piece.data):
        try:
            try:
                found: LooseEvent | None = _loose.decode(raw)
            except msgspec.ValidationError:  # not an object, or a number beyond float range
                found = loose_by_field(raw)
        except msgspec.DecodeError:  # invalid UTF-8 in a value read: the file is wrong
            raise _not_utf8(src, bytes(raw), data, offset) from None
        if found is None:
            _count(dropped, NOT_AN_OBJECT)
            continue
        loose = found
        unusable: list[str] = []
        event = to_event(loose, unusable)
        if event.ph:  # an entry without a phase is dropped whole, its values unread
            builder.count_unusable(unusable)
        events.append(event)
        stamps.append(loose.ts)
        written[0].append(_written(loose.ts))
        written[1].append(_written(loose.dur))
    builder.add(events, lambda: stamps, written)


def _not_utf8(src: Source, event: bytes, data: bytes, offset: int) -> UsageError:
    """The error for an event whose text is not UTF-8, at its first bad byte, as the typed
    decoding of the same batch would have said (cuts never split an event)."""
    try:
        event.decode("utf-8")
    except UnicodeDecodeError as bad:
        return src.malformed(_INVALID["utf8"], offset + data.find(event) + bad.start)
    return src.malformed("invalid JSON", offset + data.find(event))


def _written(raw: msgspec.Raw) -> bool:
    """Whether a value was written (``null`` is as good as absent)."""
    return raw is not NO_RAW and bytes(raw) != b"null"


# ---- metadata --------------------------------------------------------------------------
def _meta(
    h: dict[str, Any], src: Path, n: int, dropped: dict[str, int], origin: int,
    b: TableBuilder
) -> TraceMeta:
    dist = h.get("distributedInfo")
    props = h.get("deviceProperties")
    return TraceMeta(
        source=str(src),
        n_events=n,
        n_dropped=sum(dropped.values()),
        dropped_entries=dict(sorted(dropped.items())),
        unusable_values=dict(sorted(b.unusable_values.items())),
        skipped_events=dict(sorted(b.skipped_events.items())),
        ts_origin_us=origin,
        schema_version=_int(h.get("schemaVersion")),
        trace_name=_text(h.get("traceName")),
        display_time_unit=_text(h.get("displayTimeUnit")),
        base_time_ns=_int(h.get("baseTimeNanoseconds")),
        device_properties=tuple(d for d in props if isinstance(d, dict))
        if isinstance(props, list)
        else (),
        distributed=DistributedInfo(
            rank=_int(dist.get("rank")),
            world_size=_int(dist.get("world_size")),
            backend=_text(dist.get("backend")),
        )
        if isinstance(dist, dict)
        else None,
        process_names=b.process_names,
        process_labels=b.process_labels,
        process_sort_index=b.process_sort_index,
        thread_names=b.thread_names,
        thread_sort_index=b.thread_sort_index,
        id_labels=b.id_labels,
        attnprof=ours if isinstance(ours := h.get("attnprof"), dict) else None,
        side_tables=b.side_tables,
    )


def _int(value: Any) -> int | None:
    return value if type(value) is int else None  # bool is not a count


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
