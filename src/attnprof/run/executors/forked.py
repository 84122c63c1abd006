"""One call in a forked child while this process does something else meanwhile.

:func:`call_in_child` forks; the child makes the call and sends its result back over a
pipe (msgpack, decoded as the type the caller names), while the parent runs its own
``meanwhile`` work, then reads the result. It is for a short command whose work splits
into two halves that do not depend on each other and are each one core's work: on a
machine with a second core they overlap instead of following each other
(``attnprof analyze`` reads and analyses a trace in the child while the parent imports
the views and opens the store; see :mod:`attnprof.cli.analyze_cmd`).

The call may also send parts of its result as it goes (``send(value)``): each reaches the
parent's ``on_part`` as soon as the parent is free, while the child goes on (``attnprof
analyze`` draws a trace's header and region tables while the child runs the findings).

The child is never waited for after it has answered: freeing its memory is its exit's
work, done on its own core while the parent goes on (it is reaped at the parent's exit).
Each message's length comes first, so the parent reads to the answer's end, not to the
child's exit; the pipe holds 1 MiB where Linux allows, so the child does not wait for the
parent to read a part.

What the child ends with reaches the parent as it would have from a call made here: the
result; a :class:`~attnprof.errors.UsageError` (the same message); another exception
(:class:`ChildFailed`, with the child's traceback); or the way it died without answering,
a crash or the OOM killer (:class:`ChildDied`). The child ignores Ctrl-C, which the parent
gets too: the parent takes the child down when it stops early for any reason (Ctrl-C,
SIGTERM, an exception from ``meanwhile``).

Only where :func:`fork_pays`: Linux, two usable CPUs or more, and a process that runs no
thread but this one (a fork copies only the calling thread: a lock another thread held
would stay locked in the child). Where the fork itself fails (a process limit, no
memory), ``meanwhile`` and the call are made here, one after the other: the same result,
only not side by side.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from attnprof.errors import UsageError

__all__ = ["ChildDied", "ChildFailed", "Send", "call_in_child", "fork_pays"]

R = TypeVar("R")

_LENGTH_BYTES = 8  # a message's size, sent before it
_READ_BYTES = 1 << 20
_PIPE_BYTES = 1 << 20  # what the pipe holds (Linux's default most for an unprivileged user)
_F_SETPIPE_SZ = 1031  # fcntl's, on Linux
_PART, _ANSWER = b"p", b"a"  # a message's first byte: what follows

#: What the call is given to send a part with.
Send = Callable[[Any], None]
P = TypeVar("P")


class ChildDied(RuntimeError):
    """The child ended without answering (a crash, the OOM killer, ``os._exit``)."""


class ChildFailed(RuntimeError):
    """The call raised an exception other than a usage error in the child; the message
    holds the child's traceback."""


def fork_pays() -> bool:
    """Whether :func:`call_in_child` can run here, beside this process (module doc): on
    Linux (elsewhere a fork without exec is either missing or, on macOS, unsafe once system
    frameworks are loaded), with no other thread, on two usable CPUs or more."""
    from attnprof.measure.threads import usable_cpus

    return (sys.platform.startswith("linux") and threading.active_count() == 1
            and usable_cpus() >= 2)


def call_in_child(call: Callable[[Send], R], *, returns: type[R],
                  meanwhile: Callable[[], None], part: type[P] | None = None,
                  on_part: Callable[[P], None] | None = None) -> R:
    """``call(send)`` made in a forked child while this process runs ``meanwhile()``; its
    result, sent back as msgpack and decoded as ``returns``, or its failure raised here
    (module doc). Each ``send(value)`` of the call reaches ``on_part`` here, decoded as
    ``part``, in order, before the result. An exception from ``meanwhile`` or ``on_part``
    stops the child and propagates."""
    import msgspec

    readable, writable = os.pipe()
    _widen(writable)
    for stream in (sys.stdout, sys.stderr):  # else the child's exit would write them again
        if stream is not None:
            stream.flush()
    try:
        pid = os.fork()
    except OSError:  # no process to spare (a process limit, memory): both here, in turn
        os.close(readable)
        os.close(writable)
        meanwhile()
        return call(on_part if on_part is not None else _unexpected_part)
    if pid == 0:
        os.close(readable)
        _child(call, writable)  # never returns
    os.close(writable)
    data: bytes | None = None
    status = 0
    try:
        meanwhile()
        decoder = msgspec.msgpack.Decoder(tuple[str, returns | str])  # type: ignore[valid-type]
        parts = msgspec.msgpack.Decoder(part) if part is not None else None
        while (message := _read_message(readable)) is not None:
            if message[:1] == _ANSWER:
                data = message[1:]
                break
            if parts is None or on_part is None:
                _unexpected_part(message)
            else:
                on_part(parts.decode(memoryview(message)[1:]))
    finally:
        os.close(readable)
        if data is None:  # it died, or this process stops early: none of it left running
            status = _stop(pid)
    if data is None:
        raise ChildDied(_death(status))
    import atexit

    atexit.register(_reap, pid)  # it is ending now; reaped before this process ends
    said, value = decoder.decode(data)
    if said == "ok":
        return value  # type: ignore[no-any-return]
    if said == "usage":
        raise UsageError(str(value))
    raise ChildFailed(f"the call failed in the child process:\n{value}")


def _child(call: Callable[[Send], Any], writable: int) -> None:
    """Make the call, send ``(said, result or message)`` and end, without running what the
    parent's exit runs (its ``finally`` blocks, atexit hooks and buffers are the parent's)."""
    code = 1
    try:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent gets it too, and stops us
        for name in ("SIGTERM", "SIGHUP"):  # the parent's handlers raise; here just end
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        import msgspec

        def send(value: object) -> None:
            _send(writable, _PART, msgspec.msgpack.encode(value))

        answer: tuple[str, object]
        try:
            answer = ("ok", call(send))
        except UsageError as exc:
            answer = ("usage", str(exc))
        except Exception:
            import traceback

            answer = ("error", traceback.format_exc())
        try:
            data = msgspec.msgpack.encode(answer)
        except (TypeError, ValueError, OverflowError):  # a result msgpack cannot hold
            import traceback

            data = msgspec.msgpack.encode(("error", traceback.format_exc()))
        _send(writable, _ANSWER, data)
        code = 0
    finally:
        try:
            if sys.stderr is not None:
                sys.stderr.flush()  # what the call printed there
        finally:
            os._exit(code)


def _unexpected_part(value: object) -> None:
    raise ChildFailed("the call sent a part, and no part was expected")


def _widen(fd: int) -> None:
    """Let the pipe hold :data:`_PIPE_BYTES` where the platform allows (else it keeps its
    own size: the child then waits for the parent to read, nothing worse)."""
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)


def _send(fd: int, kind: bytes, body: bytes) -> None:
    """One message: its length, its kind, its msgpack."""
    _write_all(fd, (len(body) + 1).to_bytes(_LENGTH_BYTES, "little") + kind + body)


def _write_all(fd: int, data: bytes) -> None:
    with memoryview(data) as view:
        sent = 0
        while sent < len(view):
            sent += os.write(fd, view[sent:])


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``, or None when it ends before."""
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, _READ_BYTES))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_message(fd: int) -> bytes | None:
    """The child's next whole message, or None when it ended before one."""
    head = _read_exactly(fd, _LENGTH_BYTES)
    return None if head is None else _read_exactly(fd, int.from_bytes(head, "little"))


def _stop(pid: int) -> int:
    """Kill the child (not reaped yet, so ``pid`` is still its own, even once it has
    ended) and reap it: its wait status, the one it ended with if it had."""
    import signal

    os.kill(pid, signal.SIGKILL)
    return os.waitpid(pid, 0)[1]


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # reaped already
        os.waitpid(pid, 0)


def _death(status: int) -> str:
    """How the child ended without answering, in words."""
    if os.WIFSIGNALED(status):
        import signal

        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "a signal"
        return f"the child process was killed by {name} (signal {number}) before it answered"
    return (f"the child process exited with status {os.waitstatus_to_exitcode(status)} "
            "before it answered")
