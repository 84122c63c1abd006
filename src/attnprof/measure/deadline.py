"""A time limit on one phase of one variant, inline: a hung user variant becomes a row.

:func:`time_limit` arms a real-time interval timer (``SIGALRM``); when it fires, the
handler raises :class:`TimeLimitExceeded` in the code that is running, which the comparison
turns into a ``timeout`` row before going on with the next variant.

Its limits are Python's: the handler runs in the main thread between bytecodes, so it stops
a Python-level hang (a loop, ``time.sleep``, a wait on a lock with a timeout) but not a hang
inside one native call (a deadlocked kernel, a blocked C extension), nor a variant that
ignores or blocks the alarm — for those, use ``--executor process``, whose parent times
each phase from outside and kills the worker (:mod:`attnprof.run.phases`). Where there is
no ``SIGALRM`` (Windows) or outside the main thread, no limit is set. An interval timer
the caller already runs (pytest-timeout's, a caller's own deadline) is kept: when it would
fire first, it is the limit and this block sets none; otherwise this block's timer runs
and the caller's is put back afterwards with the time it had left.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

__all__ = ["TimeLimitExceeded", "time_limit"]


class TimeLimitExceeded(BaseException):
    """Raised in the running code when its time limit passes.

    A ``BaseException``, like ``KeyboardInterrupt``: user code's ``except Exception`` must
    not swallow it and carry on hanging.
    """

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds, self.what = seconds, what
        super().__init__(f"did not finish {what} within {seconds:g} s")


@contextlib.contextmanager
def time_limit(seconds: float | None, what: str) -> Iterator[None]:
    """Raise :class:`TimeLimitExceeded` in this block if it runs past ``seconds``
    (``None``: no limit). ``what`` names the phase in the message."""
    if (seconds is None or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    # The caller's timer, if one runs. Ignoring ours under it left a hung variant hanging
    # under pytest-timeout (whose own alarm the comparison then caught as an error row).
    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    if 0 < outer <= seconds:  # the caller's fires first: it is the limit
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimitExceeded(seconds, what)

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if outer > 0:  # the caller's timer goes on with what it had left
            left = outer - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))
