"""Stopping on request: Ctrl-C, SIGTERM and SIGHUP end a run, and only they do.

``docker stop``, Slurm at the end of a job's time, CI runners cancelling a job and
``kill PID`` all send SIGTERM; a closed terminal sends SIGHUP. By default either ends
Python at once: no ``finally`` runs, the rows a Ctrl-C would have saved are lost and a
temporary file being written stays beside its target. Inside :func:`stop_signals_as_interrupts`
they raise :class:`Terminated` instead — a :class:`KeyboardInterrupt`, so every path that
keeps finished work on Ctrl-C keeps it on these too — and the command exits with
``128 + signal`` (143 for SIGTERM, 129 for SIGHUP; 130 for Ctrl-C).

SIGINT is handled the same way, so that a stop is told apart from an exception of the same
type that user code raises: a variant that raises ``KeyboardInterrupt`` itself has a bug
(its row's error), while Ctrl-C stops the run. The handler remembers every stop it raises
(:func:`stop_received`), so a stop that user code caught, swallowed or turned into another
exception still stops the run at the next check.

Python runs signal handlers in the main thread between bytecodes: a signal that arrives
during one long native call (a large matmul) takes effect when that call returns.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "exit_status", "raise_if_stopped", "reraise_stop", "stop_received",
           "stop_signals_as_interrupts"]

#: The signals handled, where the platform has them.
HANDLED: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """A stop signal (Ctrl-C, SIGTERM, SIGHUP) that arrived: raised in the main thread where
    Ctrl-C would raise KeyboardInterrupt, so it is one to every ``except`` clause."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__("interrupted" if signum == signal.SIGINT
                         else f"stopped by {signal.Signals(signum).name}")


#: The stop raised since the outermost :func:`stop_signals_as_interrupts` block began.
_received: Terminated | None = None
_depth = 0


def exit_status(exc: KeyboardInterrupt) -> int:
    """The exit status for a stop: 128 + the signal (130 for Ctrl-C)."""
    return exc.exit_code if isinstance(exc, Terminated) else 130


def stop_received() -> Terminated | None:
    """The stop signal that arrived during the current :func:`stop_signals_as_interrupts`
    block, if one did (``None`` outside one, or when none arrived)."""
    return _received


def raise_if_stopped() -> None:
    """Raise the stop that arrived, if one did — also when the code it interrupted caught
    it, or raised something else in its place."""
    if _received is not None:
        raise _received


def reraise_stop(exc: BaseException) -> None:
    """Called with an exception user code raised: raise the stop behind it, if there is
    one, else return (``exc`` is the user code's own, to report as its failure).

    The stop is the signal that arrived (also when ``exc`` is something else the user code
    raised in its place), or ``exc`` itself when it is a ``KeyboardInterrupt`` that may
    be Ctrl-C: raised in the main thread while SIGINT is handled elsewhere (Python's
    default handler, outside :func:`stop_signals_as_interrupts`), where the two cannot be
    told apart.
    """
    raise_if_stopped()
    if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Terminated) \
            and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, _raise_terminated):
        raise exc


@contextlib.contextmanager
def stop_signals_as_interrupts() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Terminated` in the main
    thread (blocks nest; the outermost one forgets the stops it saw when it ends).

    A signal that was ignored when the block began (``nohup``, a background job of a
    script, a parent that set SIG_IGN) stays ignored; the previous handlers are restored
    when the block ends. Outside the main thread, where Python cannot install handlers,
    this does nothing.
    """
    global _depth, _received
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in HANDLED}
    if _depth == 0:
        _received = None
    _depth += 1
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _received = None
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def installed_handlers() -> dict[signal.Signals, object]:
    """The handlers of the stop signals (and SIGALRM, which time limits use) now: what a
    caller restores when user code may have replaced them."""
    sigs = (*HANDLED, *((signal.SIGALRM,) if hasattr(signal, "SIGALRM") else ()))
    return {sig: signal.getsignal(sig) for sig in sigs}


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    global _received
    stop = Terminated(signum)
    if _received is None:  # the first stop decides the exit status
        _received = stop
    raise stop
