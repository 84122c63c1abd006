"""A time limit on one phase of one variant, inline: a hung user variant becomes a row.

:func:`time_limit` arms a real-time interval timer (``SIGALRM``); when it fires, the
handler raises :class:`TimeLimitExceeded` in the code that is running, which the comparison
turns into a ``timeout`` row before going on with the next variant.

Its limits are Python's: the handler runs in the main thread between bytecodes, so it stops
a Python-level hang (a loop, ``time.sleep``, a wait on a lock with a timeout) but not a hang
inside one native call (a deadlocked kernel, a blocked C extension), nor a variant that
ignores or blocks the alarm — for those, use ``--executor process``, whose parent times
each phase from outside and kills the worker (:mod:`attnprof.run.phases`). Where there is
no ``SIGALRM`` (Windows), outside the main thread, or when the caller already has an
interval timer running, no limit is set.
"""

from __future__ import annotations

import contextlib
import signal
import threading
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
            or threading.current_thread() is not threading.main_thread()
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeLimitExceeded(seconds, what)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
