"""What the command line prints to stdout, made safe for where it goes: a reader that leaves
early (``attnprof show RUN | head -1``), and a terminal shown text from a record.

A closed pipe ends the printing, never the run: the command goes on, stores its record and
exits with its own status (issue 30). A record's JSON printed to a terminal has control and
bidi characters escaped (``\\u202e``): the same JSON, which no longer reorders or hides
what the terminal shows.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from typing import TextIO

__all__ = ["devnull_for_closed_streams", "json_for_terminal", "quiet_when_reader_leaves"]


class _PipeEnd(io.FileIO):
    """stdout's descriptor, written to by its buffer; once the reader has gone, /dev/null.

    Python's recipe for a closed pipe (the library reference's "Note on SIGPIPE": point
    stdout at /dev/null, so that what is still printed, and the flush at exit, go nowhere
    without a ``BrokenPipeError``), taken where the error is raised: a command that is
    printing its view when the reader leaves goes on to store its run."""

    def write(self, data: object) -> int:
        try:
            return super().write(data)  # type: ignore[arg-type]
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.fileno())
            finally:
                os.close(devnull)
            return len(memoryview(data))  # type: ignore[arg-type]  # dropped, as read


def devnull_for_closed_streams() -> None:
    """Give a standard descriptor the shell closed (``attnprof analyze T >&-``, ``2>&-``,
    ``<&-``) /dev/null, before anything opens a file: the report (or the messages) then go
    nowhere, as asked, instead of ending a finished run in a traceback about ``None``, and
    no file the run opens (the store's database, an output) can take descriptor 1 or 2
    and be written to by a ``print``. Called once, by the ``attnprof`` command, first."""
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY),
                           (2, "stderr", os.O_WRONLY)):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        opened = os.open(os.devnull, mode)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
        if getattr(sys, name) is None:  # Python found the descriptor closed at start-up
            raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
            setattr(sys, name, io.TextIOWrapper(raw, encoding="utf-8",
                                                write_through=fd != 0))


def quiet_when_reader_leaves() -> None:
    """Make ``sys.stdout`` and ``sys.stderr``, where they are a pipe or a socket, streams
    whose closing by the reader drops the rest of the output instead of raising (see
    :class:`_PipeEnd`): ``| head -1`` and ``2>&1 | head -1`` alike. Called once, by the
    ``attnprof`` command, before anything is printed."""
    sys.stdout = _quiet(sys.stdout)
    sys.stderr = _quiet(sys.stderr)


def _quiet(stream: TextIO) -> TextIO:
    if not isinstance(stream, io.TextIOWrapper):
        return stream  # a test's capture, or an embedding program's own stream
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return stream
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return stream  # a terminal or a file: no reader to leave
    stream.flush()
    raw = _PipeEnd(fd, "w", closefd=False)
    # Buffered as it was: unbuffered under python -u or PYTHONUNBUFFERED, where a write
    # reaches the pipe where the command prints (inside its stop handler), not at exit.
    layer = raw if isinstance(stream.buffer, io.RawIOBase) else io.BufferedWriter(raw)
    return io.TextIOWrapper(layer, encoding=stream.encoding,
                            errors=stream.errors, line_buffering=stream.line_buffering,
                            write_through=stream.write_through)


#: What a terminal does not show as a glyph, outside the C0 controls JSON escapes already:
#: DEL and the C1 controls, the soft hyphen, the Arabic letter mark, the zero-width and bidi
#: marks, embeddings, overrides and isolates, the line and paragraph separators, the
#: invisible operators, the byte-order mark, the interlinear annotations and the tag
#: characters (Unicode's Cc, Cf, Zl and Zp outside ASCII).
_HIDDEN = re.compile("[\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                     "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]")


def json_for_terminal(text: str) -> str:
    """JSON text with every :data:`_HIDDEN` character written as its ``\\uXXXX`` escape:
    the same JSON to a parser (such characters only occur inside strings). Records saved
    by older versions may hold labels with them."""
    return _HIDDEN.sub(lambda m: "".join(f"\\u{u:04x}" for u in _utf16(m[0])), text)


def _utf16(char: str) -> list[int]:
    """The UTF-16 code units JSON writes an escape of ``char`` with (two above U+FFFF)."""
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]
