"""The loader's own gzip reader (a background thread, large zlib calls) reads exactly what
:mod:`gzip` reads, and fails where :mod:`gzip` fails: multi-member files, zero padding,
trailing garbage, truncation, a damaged CRC, any read size."""

from __future__ import annotations

import gzip
import io
import random
import zlib

import pytest

from attnprof.trace import source
from attnprof.trace.source import _Inflater


def _read(data: bytes, view_size: int) -> bytes | None:
    """Everything the inflater gives for ``data``, ``view_size`` bytes at a time; None on
    the errors Source turns into a UsageError."""
    inflater = _Inflater(io.BufferedReader(io.BytesIO(data)))
    out, buf = bytearray(), bytearray(view_size)
    try:
        with memoryview(buf) as view:
            while n := inflater.readinto(view):
                out += view[:n]
        return bytes(out)
    except (EOFError, OSError, zlib.error):
        return None
    finally:
        inflater.close()


def _gzip_reads(data: bytes) -> bytes | None:
    try:
        return gzip.GzipFile(fileobj=io.BytesIO(data)).read()
    except (EOFError, OSError, zlib.error):
        return None


def _cases() -> list[bytes]:
    rng = random.Random(7)
    # Larger than the reader's pieces and compressed reads, so members span several.
    text = bytes(rng.randrange(6) for _ in range(3 << 20)) + b"{}" * 500_000
    packed = gzip.compress(text, compresslevel=1)
    small = gzip.compress(b'{"traceEvents": []}')
    flipped = bytearray(packed)
    flipped[len(packed) // 2] ^= 0x10
    return [
        packed, small, gzip.compress(b""),
        packed + b"\x00" * 16,  # zero padding after a member
        packed + small,  # two members
        small + b"\x00" * 3 + small,
        packed + b"garbage", small + b"\x1f",  # not a member after one
        packed[: len(packed) // 2], small[:-3],  # truncated
        packed[:-8] + b"\x01" * 8,  # CRC-32 and length damaged
        bytes(flipped),
    ]


@pytest.fixture(params=["installed", "zlib"])
def inflate_with(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The inflate in use (ISA-L's where its wheel installed), and the standard library's
    zlib that reads traces where it did not."""
    if request.param == "zlib":
        monkeypatch.setattr(source, "_zlib", zlib)
    return str(request.param)


@pytest.mark.parametrize("view_size", [4093, 1 << 20, 3 << 20])
def test_gzip_reader_reads_what_gzip_reads(view_size: int, inflate_with: str) -> None:
    for data in _cases():
        assert _read(data, view_size) == _gzip_reads(data)


def test_gzip_reader_stops_its_thread_when_closed_early() -> None:
    inflater = _Inflater(io.BufferedReader(io.BytesIO(gzip.compress(b"x" * (8 << 20)))))
    with memoryview(bytearray(10)) as view:
        assert inflater.readinto(view) == 10
    inflater.close()  # the thread was waiting for room: it must end, not hang
    assert not inflater._thread.is_alive()
