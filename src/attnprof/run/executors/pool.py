"""Many small calls in a few worker processes: the local executor's batch method.

:func:`map_in_processes` keeps ``workers`` processes busy, each taking one item at a time
over a pipe and sending back one result, so a worker holds one item's data at a time (one
trace, for the rank reader) and peak memory stays near workers × one item. The parent
knows which item every worker holds, so when a worker dies (a segfault, the OOM killer)
that item alone gets ``failed(item, how it died)``, a new worker takes over and the rest go
on. An exception raised by the call is its item's ``failed`` result too, never the end of
the batch.

Workers are forked on Linux when this process runs a single thread (the usual case for a
command that has not started one): they start in milliseconds with everything already
imported. Otherwise (threads running, other platforms) they come from a fork server, which
needs ``fn`` and the items to be importable and picklable — a module-level function, as
every executor asks. A worker ignores Ctrl-C: the parent, which gets it too, stops them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from typing import Any, TypeVar

from attnprof.measure.threads import usable_cpus

__all__ = ["default_workers", "map_in_processes"]

T = TypeVar("T")
R = TypeVar("R")

#: Seconds a worker gets to leave after being told to, before it is terminated.
_LEAVE_S = 2.0


def default_workers() -> int:
    """The cores this process may run on."""
    return usable_cpus()


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    item: int | None = None  # the index it holds


def map_in_processes(fn: Callable[[T], R], items: Sequence[T], *,
                     failed: Callable[[T, str], R], workers: int | None = None,
                     on_result: Callable[[int, R], None] | None = None) -> list[R]:
    """``[fn(item) for item in items]``, computed in worker processes (see the module doc).

    ``on_result(index, result)`` is told of each result as it arrives (in any order).
    """
    results: dict[int, R] = {}
    pending = deque(range(len(items)))
    context = _context()
    busy: list[_Worker] = []

    def settle(index: int, result: R) -> None:
        results[index] = result
        if on_result is not None:
            on_result(index, result)

    def hand_out(worker: _Worker) -> None:
        worker.item = pending.popleft()
        worker.conn.send((worker.item, items[worker.item]))

    try:
        for _ in range(min(workers or default_workers(), len(items))):
            worker = _start(context, fn)
            busy.append(worker)
            hand_out(worker)
        while busy:
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
            for worker in list(busy):
                if worker.conn in ready or worker.process.sentinel in ready:
                    answer = _receive(worker)
                    index = worker.item
                    assert index is not None
                    if answer is None:  # it died holding the item
                        settle(index, failed(items[index], _death(worker.process)))
                        _stop(worker)
                        busy.remove(worker)
                        if pending:
                            worker = _start(context, fn)
                            busy.append(worker)
                            hand_out(worker)
                        continue
                    # The next item first: the worker starts it while this one's result is
                    # unpickled and heard of (a rank summary: a third of a millisecond).
                    if pending:
                        hand_out(worker)
                    else:
                        _stop(worker)
                        busy.remove(worker)
                    said, ok, value = ForkingPickler.loads(answer)
                    assert said == index
                    settle(index, value if ok else failed(items[index], value))
    finally:
        for worker in busy:  # stopped early (Ctrl-C, SIGTERM): take the workers down too
            _stop(worker, at_once=True)
    return [results[i] for i in range(len(items))]


def _context() -> BaseContext:
    methods = multiprocessing.get_all_start_methods()
    if sys.platform == "linux" and "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _start(context: BaseContext, fn: Callable[[Any], Any]) -> _Worker:
    mine, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(theirs, fn), daemon=True,  # type: ignore[attr-defined]
                              name="attnprof-worker")
    process.start()
    theirs.close()
    return _Worker(process=process, conn=mine)


def _receive(worker: _Worker) -> bytes | None:
    """The worker's answer, pickled (``(index, ok, result-or-reason)``), or None when it
    died without one."""
    try:
        if worker.conn.poll():
            return worker.conn.recv_bytes()
    except (EOFError, OSError):
        pass
    return None


def _stop(worker: _Worker, *, at_once: bool = False) -> None:
    with contextlib.suppress(OSError, BrokenPipeError):
        if not at_once:
            worker.conn.send(None)
    worker.process.join(0 if at_once else _LEAVE_S)
    if worker.process.is_alive():
        worker.process.terminate()
        worker.process.join(_LEAVE_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
    worker.conn.close()


def _death(process: BaseProcess) -> str:
    process.join(_LEAVE_S)
    code = process.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker reading it was killed by {name} (signal {-code})"
    return f"the worker reading it exited with status {code} before answering"


def _serve(conn: Connection, fn: Callable[[Any], Any]) -> None:
    """A worker: answer ``(index, ok, result-or-reason)`` per item until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    for name in ("SIGTERM", "SIGHUP"):  # the parent's handlers raise; here just end
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, item = message
        try:
            answer = (index, True, fn(item))
        except Exception as exc:
            answer = (index, False, f"attnprof failed on it ({type(exc).__name__}: {exc}); "
                                    "please report this with the file")
        conn.send(answer)
