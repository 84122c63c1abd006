"""Stopping on request: SIGTERM and SIGHUP end a run the way Ctrl-C does.

``docker stop``, Slurm at the end of a job's time, CI runners cancelling a job and
``kill PID`` all send SIGTERM; a closed terminal sends SIGHUP. By default either ends
Python at once: no ``finally`` runs, the rows a Ctrl-C would have saved are lost and a
temporary file being written stays beside its target. Inside :func:`stop_signals_as_interrupts`
they raise :class:`Terminated` instead — a :class:`KeyboardInterrupt`, so every path that
keeps finished work on Ctrl-C keeps it on these too — and the command exits with
``128 + signal`` (143 for SIGTERM, 129 for SIGHUP; 130 for Ctrl-C).

Python runs signal handlers in the main thread between bytecodes: a signal that arrives
during one long native call (a large matmul) takes effect when that call returns.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "exit_status", "stop_signals_as_interrupts"]

#: The signals handled, where the platform has them.
HANDLED: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """A stop signal other than SIGINT, raised where Ctrl-C would raise KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"stopped by {signal.Signals(signum).name}")


def exit_status(exc: KeyboardInterrupt) -> int:
    """The exit status for a stop: 128 + the signal (130 for Ctrl-C)."""
    return exc.exit_code if isinstance(exc, Terminated) else 130


@contextlib.contextmanager
def stop_signals_as_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread.

    A signal that was ignored when the block began (``nohup``, a parent that set SIG_IGN)
    stays ignored; the previous handlers are restored when the block ends. Outside the
    main thread, where Python cannot install handlers, this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in HANDLED}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)
