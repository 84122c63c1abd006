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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnprof.trace.table import Trace

__all__ = ["BackgroundLoad"]


class BackgroundLoad:
    """``load_trace(path, **options)`` running in a daemon thread from construction on."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        self.path = path
        self._trace: Trace | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(options,),
                                        name="attnprof-load", daemon=True)
        self._thread.start()

    def _run(self, options: dict[str, Any]) -> None:
        try:
            from attnprof.trace.loader import load_trace

            self._trace = load_trace(self.path, **options)
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
