"""A trace loaded in a background thread while this one gets on with something else.

``attnprof analyze`` of one trace spends its first tenth of a second importing the
analysis (numpy, msgspec, the passes and the rules), and the next loading the trace:
inflating gzip text and scanning it in C, both without the GIL. Started before those
imports, :class:`BackgroundLoad` reads the trace on the machine's other core meanwhile,
and :meth:`BackgroundLoad.result` hands over the same :class:`~attnprof.trace.table.Trace`
(or raises the same error) that :func:`~attnprof.trace.loader.load_trace` would have,
where it would have. This module imports nothing heavy itself: the thread imports the
loader.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnprof.trace.table import Trace

__all__ = ["BackgroundLoad"]

#: Pieces of 1 MiB of text a gzip file may inflate ahead of the reader (four otherwise):
#: the loader's imports take about as long as inflating 16 MiB.
_HEAD_START = 16


class BackgroundLoad:
    """``load_trace(path, side_tables=...)`` running in a daemon thread from construction
    on."""

    def __init__(self, path: str | os.PathLike[str], *, side_tables: bool = True) -> None:
        self.path = path
        self._trace: Trace | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(side_tables,),
                                        name="attnprof-load", daemon=True)
        self._thread.start()

    def _run(self, side_tables: bool) -> None:
        try:
            # The file first: a gzip file's text inflates (on its own thread, without the
            # GIL) while the loader's own imports are made, up to _HEAD_START MiB ahead.
            from attnprof.trace.source import DEFAULT_CHUNK_BYTES, Source

            src = Source(Path(self.path), DEFAULT_CHUNK_BYTES, ahead=_HEAD_START)
            from attnprof.trace.loader import load_source

            self._trace = load_source(src, side_tables=side_tables)
        except BaseException as exc:  # handed to the caller of result(), as raised
            self._error = exc

    def result(self) -> Trace:
        """The loaded trace, once the thread is done; what loading raised, raised here."""
        self._thread.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        assert self._trace is not None
        return self._trace
