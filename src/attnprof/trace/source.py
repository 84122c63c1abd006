"""The bytes of a trace file: opening, decompressing and chunked reading.

:class:`Source` reads the (decompressed) text; :class:`TextBuffer` holds the unread part in
one ``bytearray`` that is filled in place with ``readinto``, so reading never holds more than
that buffer plus one ``_PIECE`` (a gzip file: plus the few pieces its background thread
decompresses ahead, :class:`_Inflater`).

The JSON around the event list (the keys before and after it) is walked by
:mod:`attnprof.trace.envelope`, the events by :mod:`attnprof.trace.loader`.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import zlib
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attnprof.errors import UsageError
from attnprof.input_files import open_input

try:  # ISA-L's inflate, zlib's interface at twice its speed (63 -> 29 ms for 54 MB of text)
    from isal import isal_zlib as _zlib
except ImportError:  # a platform without its wheel: the standard library's zlib
    _zlib = zlib  # type: ignore[misc]

__all__ = ["WS", "Source", "TextBuffer"]

WS = b" \t\r\n"
_PIECE = 1 << 20  # largest single read: bounds gzip's temporary output


class Source:
    """A trace file opened for streaming; I/O and decompression failures raise UsageError."""

    def __init__(self, path: Path, chunk_bytes: int) -> None:
        self.path = path
        self.chunk_bytes = chunk_bytes
        self.offset = 0  # bytes of text read so far
        self.eof = False
        self._file = self._open(path)
        try:
            head = self._head()  # may put a wrapper in place of self._file
        except BaseException:
            self._file.close()
            raise
        self.gzipped = head == b"\x1f\x8b"  # by content: names lie
        self._stream: io.BufferedIOBase | _Inflater = (
            _Inflater(self._file) if self.gzipped else self._file)

    def _open(self, path: Path) -> io.BufferedIOBase:
        """The file, opened once: pipes (``/dev/stdin``, ``<(...)``) cannot be opened twice.
        A regular file or a pipe (read as a stream, in bounded memory), nothing else."""
        return open_input(path, f"trace file {str(path)!r}", pipes=True)

    def _head(self) -> bytes:
        """The first two bytes (gzip's magic, or not), leaving the stream where it was."""
        head = b""
        with contextlib.suppress(OSError):
            if self._file.seekable():
                head = self._file.read(2)
                self._file.seek(0)
                return head
        # Not seekable: read them and put them back in front of the rest.
        try:
            while len(head) < 2 and (more := self._file.read(2 - len(head))):
                head += more
        except OSError as e:
            raise UsageError(f"cannot read trace file {self.path} ({e.strerror or e}); "
                             "check the path") from None
        self._file = io.BufferedReader(_Prefixed(head, self._file), buffer_size=_PIECE)
        return head

    def close(self) -> None:
        self._stream.close()
        self._file.close()

    def read_into(self, view: memoryview) -> int:
        """Read up to ``len(view)`` bytes of text into ``view``; 0 at the end."""
        try:
            n: int = self._stream.readinto(view) or 0
        except (EOFError, OSError, zlib.error) as e:
            kind = "gzip file" if self.gzipped else "file"
            raise UsageError(
                f"{self.path} is not a readable {kind} (truncated or corrupted: {e}); "
                "copy or export it again"
            ) from None
        self.offset += n
        self.eof = n == 0
        return n

    def malformed(self, what: str, at: int | None = None) -> UsageError:
        """The error for text that is not valid trace JSON; ``at``: offset in the text."""
        where = f" near byte {at} of the JSON text" if at is not None else ""
        return UsageError(
            f"{self.path} is not valid trace JSON: {what}{where}; the file may be truncated - "
            "export the trace again"
        )

    def too_deep(self) -> UsageError:
        """The error for JSON nested too deeply to decode (no profiler writes such a file)."""
        return UsageError(
            f"{self.path} is not a usable trace: its JSON nests arrays or objects about "
            f"{sys.getrecursionlimit()} levels deep or more, where a torch.profiler trace "
            "nests a handful; the file is corrupt or not a trace - export the trace again"
        )

    def empty(self) -> UsageError:
        return UsageError(f"trace file {self.path} is empty; export the trace again")

    def not_a_trace(self, why: str = 'no "traceEvents" list of events') -> UsageError:
        return UsageError(
            f"{self.path} is not a Chrome trace ({why}); "
            "pass a trace written by torch.profiler's export_chrome_trace"
        )


class _Prefixed(io.RawIOBase):
    """A non-seekable stream with bytes already read from it put back in front."""

    def __init__(self, prefix: bytes, rest: io.BufferedIOBase) -> None:
        self._prefix = prefix
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        return self._rest.readinto(buffer)

    def close(self) -> None:
        self._rest.close()
        super().close()


_AHEAD = 4  # pieces the inflater may decompress ahead of the reader: bounds its memory


class _Inflater:
    """The text of a gzip file, decompressed in a background thread while the caller decodes.

    zlib (and ISA-L) release the GIL while they inflate, so on a machine with a second core the
    decompression (a tenth of loading a large trace) overlaps the decoding instead of adding
    to it. Not :class:`gzip.GzipFile`: it inflates 8 KiB of input per call (Python 3.11),
    and each call has to win the GIL back from the busy decoding thread (up to the 5 ms
    switch interval), so it could not keep ahead; :func:`_inflate` makes a few large calls
    instead. Errors reach the reader where they happen in the text, after the pieces before
    them.
    """

    def __init__(self, file: io.BufferedIOBase) -> None:
        self._file = file
        self._ready: deque[bytes | BaseException] = deque()
        self._changed = threading.Condition()
        self._stop = False
        self._held = memoryview(b"")  # the unread rest of the current piece
        self._ended = False  # the whole text has been handed out
        self._error: BaseException | None = None  # why the text stops short, once reached
        self._thread = threading.Thread(target=self._run, name="attnprof-gunzip", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for piece in _inflate(self._file):
                if not self._put(piece):
                    return
            self._put(b"")
        except BaseException as e:  # the reader raises it (Source turns it into UsageError)
            self._put(e)

    def _put(self, item: bytes | BaseException) -> bool:
        """Queue ``item`` once there is room; False when the reader has closed."""
        with self._changed:
            while len(self._ready) >= _AHEAD and not self._stop:
                self._changed.wait()
            if self._stop:
                return False
            self._ready.append(item)
            self._changed.notify_all()
            return True

    def readinto(self, view: memoryview) -> int:
        while not self._held:
            if self._error is not None:
                raise self._error
            if self._ended:
                return 0
            with self._changed:
                while not self._ready:
                    self._changed.wait()
                item = self._ready.popleft()
                self._changed.notify_all()
            if isinstance(item, BaseException):
                self._error = item
            elif not item:
                self._ended = True
            else:
                self._held = memoryview(item)
        n = min(len(view), len(self._held))
        view[:n] = self._held[:n]
        self._held = self._held[n:]
        return n

    def close(self) -> None:
        """Stop the thread (it ends at its next piece) and wait for it."""
        with self._changed:
            self._stop = True
            self._changed.notify_all()
        self._thread.join()


_COMPRESSED_READ = 1 << 20  # compressed bytes per read: about 5 MiB of JSON text


def _inflate(file: io.BufferedIOBase) -> Iterator[bytes]:
    """The decompressed text of a gzip file, in pieces of at most ``_PIECE`` bytes.

    Reads every member in turn, as :mod:`gzip` does: zero bytes may pad the end of a member,
    anything else after one must be another member. zlib's gzip mode (``wbits=31``) reads
    each member's header and checks its CRC-32 and length (and the optional header CRC,
    which :mod:`gzip` skips unchecked: a file whose header is damaged there is refused).
    """
    data = b""
    while True:
        data = data.lstrip(b"\x00")
        while not data:
            data = file.read(_COMPRESSED_READ)
            if not data:
                return
            data = data.lstrip(b"\x00")
        member = _zlib.decompressobj(31)
        more = False  # zlib may hold output beyond a full piece with no input left
        while not member.eof:
            if not data and not more:
                data = file.read(_COMPRESSED_READ)
                if not data:
                    raise EOFError("Compressed file ended before the end-of-stream marker "
                                   "was reached")
            try:
                out = member.decompress(data, _PIECE)
            # ISA-L's own class becomes zlib's, as with zlib (getattr: isal's stub declares
            # ``error`` an instance, not the class it is).
            except getattr(_zlib, "error") as exc:  # noqa: B009
                raise zlib.error(str(exc)) from None
            more = len(out) == _PIECE
            data = member.unconsumed_tail
            if out:
                yield out
        data = member.unused_data


class TextBuffer:
    """Unread text of a :class:`Source` in one bytearray: ``buf[start:end]``.

    Reading appends in place (``readinto``); consumed text is dropped by moving only the
    unread tail to the front. The buffer grows geometrically up to the size asked for
    (about ``chunk_bytes``), and past it only for an event larger than that.
    """

    def __init__(self, src: Source) -> None:
        self.src = src
        self.buf = bytearray(min(src.chunk_bytes, _PIECE))
        self.start = 0
        self.end = 0

    @property
    def base(self) -> int:
        """Offset in the text of ``buf[0]``."""
        return self.src.offset - self.end

    def fill(self, size: int) -> int:
        """Read until ``size`` unread bytes are held or the input ends.

        Returns how far the unread text moved towards the front (callers holding indices
        into ``buf`` subtract it); 0 when it stayed put.
        """
        moved = 0
        while self.end - self.start < size and not self.src.eof:
            held = self.end - self.start
            want = min(_PIECE, size - held)
            if self.end + want > len(self.buf):
                if held + want <= len(self.buf):  # room at the front: move the text there
                    self.buf[:held] = self.buf[self.start : self.end]
                else:  # grow geometrically, never past what was asked for
                    grown = bytearray(max(held + want, min(2 * len(self.buf), size)))
                    grown[:held] = self.buf[self.start : self.end]
                    self.buf = grown
                moved += self.start
                self.start, self.end = 0, held
            with memoryview(self.buf) as view:
                self.end += self.src.read_into(view[self.end : self.end + want])
        return moved
