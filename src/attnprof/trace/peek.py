"""A trace's ``distributedInfo``, read from the head of the file alone.

Deciding whether a folder of traces is one distributed run needs each file's rank and world
size before any file is read whole. torch.profiler (kineto) writes ``distributedInfo``
among the keys before ``"traceEvents"``, so the first kilobytes of the text say it; this
reads at most :data:`HEAD_BYTES` of (decompressed) text, in the calling thread: the rank
set's worker processes are forked afterwards, and a process that forks should run no
other thread. A trace that keeps its ``distributedInfo`` after the events is reported as
having none here (the full load still reads it).
"""

from __future__ import annotations

import zlib
from pathlib import Path

import msgspec

from attnprof.errors import UsageError
from attnprof.input_files import open_input
from attnprof.trace.table import DistributedInfo

__all__ = ["HEAD_BYTES", "read_distributed_info"]

#: Text read at most: kineto's header (device properties of 8 GPUs, distributedInfo with
#: its process groups) is a few KiB; a large ``pg_config`` can reach hundreds.
HEAD_BYTES = 1 << 20
_KEY = b'"traceEvents"'
_PIECE = 64 << 10
#: Text inflated first: kineto's header, up to the key, fits in it unless it lists many
#: devices or process groups (then the pieces double).
_FIRST_TEXT = 8 << 10


class _Info(msgspec.Struct):
    """``distributedInfo`` as written; fields of other types are dropped, not trusted."""

    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


_head = msgspec.json.Decoder(dict[str, msgspec.Raw])
_info = msgspec.json.Decoder(_Info)


def read_distributed_info(path: str | Path) -> DistributedInfo | None:
    """The trace's ``distributedInfo`` when its head holds one, else None.

    Raises :class:`~attnprof.errors.UsageError` when the file cannot be opened, is not a
    regular file (:func:`~attnprof.input_files.open_input`: a pipe must not be peeked at,
    it can be read once only) or is not readable text (a corrupt gzip stream): the caller
    decides what an unreadable trace is.
    """
    head = _read_head(Path(path))
    key = head.find(_KEY)
    if key < 0:
        return None
    body = head[:key].rstrip(b" \t\r\n")
    body = body[:-1] if body.endswith(b",") else body
    try:
        fields = _head.decode(body.lstrip(b"\xef\xbb\xbf \t\r\n") + b"}")
        raw = fields.get("distributedInfo")
        if raw is None:
            return None
        info = _info.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None  # not a plain header (the key sat in a string): say nothing
    if type(info.rank) is not int and type(info.world_size) is not int:
        return None
    return DistributedInfo(rank=info.rank, world_size=info.world_size, backend=info.backend)


def _read_head(path: Path) -> bytes:
    """Up to :data:`HEAD_BYTES` of the file's text (gzip'd or not, told by content), read
    until the ``"traceEvents"`` key has been seen."""
    try:
        with open_input(path, f"trace file {str(path)!r}") as fh:
            feed = fh.read(_PIECE)
            inflater = zlib.decompressobj(wbits=47) if feed[:2] == b"\x1f\x8b" else None
            text = bytearray()
            step = _FIRST_TEXT
            while feed and len(text) < HEAD_BYTES and _KEY not in text:
                if inflater is None:
                    text += feed
                    feed = fh.read(_PIECE)
                    continue
                # A piece of text at a time, from a small one up: the key is usually in the
                # first few KiB, and a small compressed piece may inflate to a lot.
                text += inflater.decompress(feed, min(step, HEAD_BYTES - len(text)))
                step = min(2 * step, _PIECE)
                feed = inflater.unconsumed_tail or (b"" if inflater.eof else fh.read(_PIECE))
    except OSError as exc:
        raise UsageError(f"cannot read trace file {path} ({exc.strerror or exc}); check the "
                         "path and its permissions") from None
    except zlib.error as exc:
        raise UsageError(f"{path} is not a readable gzip file ({exc}); copy or export it "
                         "again") from None
    return bytes(text[:HEAD_BYTES])
