"""The process executor: each point runs in a fresh worker process.

A variant that kills its worker — a segfault, ``os._exit``, the kernel's OOM killer — or
stops making progress cannot take the run down with it. The parent watches the worker's
progress notes, so when the worker dies it knows which variant was running: that variant
gets a row saying how it ended (``crashed`` with the signal or exit code, ``oom`` when the
OOM killer did it, ``timeout``), with the tail of the worker's stderr, and the point's
other variants run again in a new worker. Finished rows are kept as they arrive, so
``on_record`` sees every one as soon as it exists.

Only the record crosses the boundary (see :mod:`attnprof.run.executors.worker`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from attnprof.errors import UsageError
from attnprof.record.compare import CompareRecord, ProfileRecord, VariantResult
from attnprof.run.executors import Job, OnDone, run_one_at_a_time
from attnprof.run.executors.endings import Attempt, how_it_ended
from attnprof.run.phases import limited_phase
from attnprof.run.point import OWN_STEPS, empty_record
from attnprof.scratch import SCRATCH_ENV, worker_scratch

if TYPE_CHECKING:
    from attnprof.record.model import ModelRecord
    from attnprof.run.executors import OnModelRecord
    from attnprof.run.model import ModelProgress
    from attnprof.run.point import ModelPoint, Point
    from attnprof.run.point_runner import OnRecord, Progress

__all__ = ["DEFAULT_IDLE_TIMEOUT_S", "PREPARE_S", "ProcessExecutor"]

T = TypeVar("T")
R = TypeVar("R")

_Publish = Callable[[Any], object]
#: The worker's last message, by its letter, and the field of Attempt it sets.
_LAST_WORDS = {b"D": "done", b"U": "usage_error", b"I": "interrupted", b"E": "traceback"}

#: Seconds a worker may go without reporting progress before it is deemed hung. Generous:
#: one timing round of one variant, or one compile, must fit in it.
DEFAULT_IDLE_TIMEOUT_S = 900.0
#: How long an interrupted worker gets to hand over what it measured.
_GRACE_S = 10.0
#: Past a variant's time limit in a phase, how long the worker gets to stop the variant
#: itself (its own alarm makes a ``timeout`` row and goes on with the next variant) before
#: it is killed: seconds, plus a share of the limit.
_LIMIT_GRACE_S, _LIMIT_GRACE_SHARE = 2.0, 0.1
#: Seconds a worker gets, beyond a point's time limit, to start and make attnprof's own
#: measurements (the ceilings, the float64 reference) before its variants' clock starts.
PREPARE_S = 120.0
_STDERR_TAIL = 1500


class ProcessExecutor:
    """Run each point in a worker process (``python -m attnprof.run.executors.worker``).

    ``timeout_s`` bounds one worker's whole run, ``idle_timeout_s`` the time between its
    progress notes (both from its first variant's first phase: before it, the worker's
    start-up and attnprof's own steps get :data:`PREPARE_S` more); ``memory_limit_bytes``
    caps what the variants may allocate in a worker beyond what it holds when they start
    (torch, the ceilings, the inputs and the float64 reference are in place by then), so
    exceeding it is an ``oom`` row rather than the OOM killer. A capped worker stops after
    a variant runs out of memory, and the point's other variants run again in a fresh
    worker: what one variant left behind never counts against another. The cap counts
    address space: on a CPU, measure under it with
    ``Settings(cpu_allocator="system")``, where large blocks are mapped and unmapped as
    tensors come and go (a ``reuse`` heap keeps every block it grew to, fragmented).
    """

    name = "process"
    remote = False

    def __init__(self, *, timeout_s: float | None = None,
                 idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
                 memory_limit_bytes: int | None = None, threads: int | None = None) -> None:
        self.timeout_s = timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.memory_limit_bytes = memory_limit_bytes
        #: Intra-op threads of each worker (``None``: as this process's environment says).
        self.threads = threads

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Measure ``point`` in workers until every variant has a row."""
        # Here, not at the top: reading a rank set (map_calls) needs none of the point's
        # rows and variants, and `attnprof analyze`'s start-up counts.
        from attnprof.run.rows import planned_results, status_row
        from attnprof.variants import resolve_variants

        rows: dict[str, VariantResult] = {}
        header: CompareRecord | None = None
        measured = False  # whether header came from a worker (else it is a stand-in)

        def publish(record: CompareRecord | None = None,
                    lost: dict[str, VariantResult] | None = None) -> None:
            # The caller hears of each new row once, as it arrives (as inline).
            nonlocal header, measured
            before = len(rows)
            if record is not None:
                if not measured:  # a worker's own record beats the stand-in header
                    header, measured = record, True
                rows.update((r.variant, r) for r in record.results)
            if lost:
                header = header or empty_record(point)
                rows.update(lost)
            if len(rows) > before and header is not None and on_record is not None:
                on_record(_merge(header, point, rows))

        remaining = list(point.variants)
        while remaining:
            attempt = point.replace(variants=tuple(remaining),
                                    ceilings=header.ceilings if header else point.ceilings)
            before = len(rows)
            ended = self.attempt(msgspec.json.encode(attempt), progress, publish,
                                 variant_limit=attempt.settings.variant_timeout_s)
            if ended.usage_error is not None:
                raise UsageError(ended.usage_error)
            if ended.interrupted:
                raise ended.stop or KeyboardInterrupt()
            lost = {}
            if not ended.done:
                lost = _casualties(ended, remaining, rows, planned_results(point.settings))
            elif len(rows) == before:  # done without a new row: never start it again
                lost = {v.name: status_row(v, "error", "the worker ended without measuring it")
                        for v in resolve_variants([r for r in remaining if r not in rows])}
            # Else a variant ran out of a capped worker's memory and that worker stopped
            # (see run_point's stop_after_oom): the others run again in a fresh one.
            if lost:
                publish(lost=lost)
                for name in lost:
                    if progress is not None:
                        progress(name, "done")
            remaining = [v for v in point.variants if v not in rows]
        final = _merge(header or empty_record(point), point, rows)
        final.status = "complete"
        if on_record is not None:
            on_record(final)
        return final

    def run_model(self, point: ModelPoint, *, progress: ModelProgress | None = None,
                  on_record: OnModelRecord | None = None) -> ModelRecord:
        """Each implementation in a worker process until every one has its rows: one
        that kills its worker is ``crashed`` (``timeout``, ``oom``) in every phase it had
        not finished, and the others run again in a fresh worker."""
        from attnprof.run.executors.model_workers import run_model_in_workers

        return run_model_in_workers(self.attempt, point, progress, on_record)

    def run_points(self, next_job: Callable[[], Job | None], on_done: OnDone,
                   progress: Progress | None = None) -> None:
        """The points one at a time, each as :meth:`run` runs it."""
        run_one_at_a_time(self, next_job, on_done, progress)

    def map_calls(self, fn: Callable[[T], R], items: Sequence[T], *,
                  failed: Callable[[T, str], R], workers: int | None = None,
                  on_result: Callable[[int, R], None] | None = None) -> list[R]:
        """The calls in ``workers`` local worker processes (default: one per core); see
        :func:`~attnprof.run.executors.pool.map_in_processes`."""
        from attnprof.run.executors.pool import map_in_processes

        return map_in_processes(fn, items, failed=failed, workers=workers,
                                on_result=on_result)

    # ----- one worker --------------------------------------------------------------------
    def attempt(self, payload: bytes, progress: Progress | None, publish: _Publish,
                *, variant_limit: float | None = None,
                worker: str = "attnprof.run.executors.worker",
                record_type: Any = CompareRecord | ProfileRecord) -> Attempt:
        """One worker (``python -m worker``) given ``payload`` on stdin, watched until it
        ends; how it ended. Its records (``record_type``) go to ``publish`` as they come."""
        ended = Attempt(record_type=record_type)
        read_fd, write_fd = os.pipe()
        oom_kills = _oom_kill_count()
        with tempfile.TemporaryFile() as stderr, Connection(read_fd, writable=False) as conn, \
                worker_scratch() as scratch:
            limit = str(self.memory_limit_bytes) if self.memory_limit_bytes else "-"
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", worker, str(write_fd), limit],
                    stdin=subprocess.PIPE, stderr=stderr, pass_fds=(write_fd,),
                    env={**_worker_env(capped=self.memory_limit_bytes is not None,
                                       threads=self.threads), SCRATCH_ENV: scratch})
            finally:
                os.close(write_fd)
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.write(payload)
                proc.stdin.close()
            try:
                self._watch(proc, conn, ended, progress, publish, variant_limit)
            except KeyboardInterrupt as stop:  # Ctrl-C, SIGTERM, SIGHUP (attnprof.signals)
                _interrupt(proc, conn, ended, progress, publish)
                ended.interrupted, ended.stop = True, stop
            ended.exitcode = proc.wait()
            ended.oom_killed = (ended.exitcode == -signal.SIGKILL and not ended.timed_out
                                and _oom_kill_count() > oom_kills)
            stderr.seek(0)
            ended.stderr_tail = _tail(stderr.read())
        return ended

    def _watch(self, proc: subprocess.Popen[bytes], conn: Connection, ended: Attempt,
               progress: Progress | None, publish: _Publish,
               variant_limit: float | None) -> None:
        """Relay the worker's messages until its last word, and stop it when it runs past
        a limit: the whole run's, the idle time's, or a variant's in one phase
        (``variant_limit``, the point's --variant-timeout, enforced from here too because
        the worker's own alarm cannot stop a hang inside native code)."""
        start = last = phase_start = time.monotonic()
        limited: tuple[str, str] | None = None  # (variant, time-limited phase) now running
        # The time and idle limits are the variants': the worker's start-up (imports, a
        # model's build) and attnprof's own measurements (ceilings, reference) come before
        # them, within PREPARE_S more.
        prepare_s = PREPARE_S
        while True:
            if conn.poll(0.2):
                try:
                    message = conn.recv_bytes()
                except EOFError:
                    return  # the worker is gone; its exit status says how
                last = time.monotonic()
                if _handle(message, ended, progress, publish):
                    return
                if prepare_s and ended.phase and ended.phase[0] not in OWN_STEPS:
                    start, prepare_s = last, 0.0  # the first variant's phase: its clock
                now_limited = _limited(ended.phase)
                if now_limited != limited:
                    limited, phase_start = now_limited, last
                continue
            if proc.poll() is not None and not conn.poll(0):
                return
            now = time.monotonic()
            if self.timeout_s is not None and now - start > self.timeout_s + prepare_s:
                ended.timed_out = f"ran past the {self.timeout_s:g} s time limit"
            elif (limited is not None and variant_limit is not None and now - phase_start
                  > variant_limit * (1 + _LIMIT_GRACE_SHARE) + _LIMIT_GRACE_S):
                ended.timed_out = "was killed"
                ended.over_limit = (limited[1], variant_limit)
                proc.kill()  # a native hang runs no signal handler: SIGTERM would not do
                return
            elif (self.idle_timeout_s is not None
                  and now - last > self.idle_timeout_s + prepare_s):
                ended.timed_out = f"made no progress for {self.idle_timeout_s + prepare_s:g} s"
            if ended.timed_out:
                _stop(proc)
                return


def _limited(phase: tuple[str, str] | None) -> tuple[str, str] | None:
    """The (variant, time-limited phase) a reported phase belongs to, if it is one."""
    if phase is None:
        return None
    limited = limited_phase(phase[1])
    return None if limited is None else (phase[0], limited)


def _handle(message: bytes, ended: Attempt, progress: Progress | None,
            publish: _Publish) -> bool:
    """Apply one worker message; True when the worker has said its last word."""
    kind, body = message[:1], message[1:]
    if kind == b"K":
        row = msgspec.json.decode(body, type=VariantResult)
        ended.kept[row.variant] = row
    elif kind == b"P":
        variant, phase = msgspec.json.decode(body, type=tuple[str, str])
        ended.phase = (variant, phase)
        if progress is not None:
            progress(variant, phase)
    elif kind == b"R":
        publish(msgspec.json.decode(body, type=ended.record_type))
    elif kind in _LAST_WORDS:
        field_name = _LAST_WORDS[kind]
        setattr(ended, field_name, body.decode(errors="replace") if body else True)
        return True
    return False


def _interrupt(proc: subprocess.Popen[bytes], conn: Connection, ended: Attempt,
               progress: Progress | None, publish: _Publish) -> None:
    """Ctrl-C: let the worker keep what it measured (a terminal's Ctrl-C reached it too;
    a signal sent to this process alone is passed on), then stop it."""
    start = time.monotonic()
    forwarded = False
    while time.monotonic() - start < _GRACE_S:
        if not forwarded and time.monotonic() - start > 1.0:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
            forwarded = True
        try:
            if conn.poll(0.1):
                if _handle(conn.recv_bytes(), ended, progress, publish):
                    break
            elif proc.poll() is not None:
                break
        except (EOFError, KeyboardInterrupt):
            break
    _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate, then kill a worker that does not go within two seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(2.0)
    except subprocess.TimeoutExpired:
        proc.kill()


def _casualties(ended: Attempt, remaining: list[str], rows: dict[str, VariantResult],
                planned: tuple[str, ...]) -> dict[str, VariantResult]:
    """Rows for the variants a failed worker took down: the one that was running when it
    died, keeping what its finished phases measured; all of them when it died before
    naming one."""
    from attnprof.run.rows import kept_row, status_row
    from attnprof.variants import resolve_variants

    status, how = how_it_ended(ended)
    running = ended.phase[0] if ended.phase else None
    if running in remaining and running not in rows:
        culprits = [running]
        phase = ended.phase[1] if ended.phase else ""
        how = f"{how} while {phase}" if phase and not ended.over_limit else how
    else:  # died in start-up or in attnprof's own steps: nothing tells the variants apart
        culprits = [v for v in remaining if v not in rows]
        if running == OWN_STEPS[0]:
            how += " while measuring the ceilings"
        elif running == OWN_STEPS[1]:
            how += " while computing the float64 reference"
        elif running == OWN_STEPS[2]:
            how += " while starting the profiler"
    if ended.stderr_tail:
        how += f"; worker stderr: {ended.stderr_tail}"
    variants = {v.name: v for v in resolve_variants(culprits)}
    lost = {name: status_row(variants[name], status, how) for name in culprits}
    for name, row in lost.items():
        if (kept := ended.kept.get(name)) is not None and kept.latency_ms is not None:
            lost[name] = kept_row(kept, row, planned)
    return lost


def _merge(header: CompareRecord, point: Point,
           rows: dict[str, VariantResult]) -> CompareRecord:
    """The record of the whole point: the first worker's header, every row so far, in the
    point's variant order."""
    return msgspec.structs.replace(
        header, results=[rows[v] for v in point.variants if v in rows], status="partial")


def _worker_env(*, capped: bool = False, threads: int | None = None) -> dict[str, str]:
    """This environment, with this process's import path, so the worker imports the same
    attnprof and the same user modules (``package.module:fn`` variants), and ``threads``
    intra-op threads when given."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    paths += [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if capped:
        # glibc gives each new thread an arena that reserves 64 MiB of address space, which
        # an address-space cap counts: intra-op threads would then fail to allocate a few
        # bytes (PyTorch's "error return without exception set") long before the variant's
        # own tensors reach the cap. One arena keeps the cap about the variant's memory.
        env["MALLOC_ARENA_MAX"] = "1"
    if threads is not None:  # torch's intra-op pool, and the BLAS/OpenMP below it
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env


def _tail(data: bytes) -> str:
    """The last lines of a worker's stderr, on one line (Kineto's USDT noise dropped)."""
    lines = [ln for ln in data.decode(errors="replace").splitlines()
             if ln.strip() and not ln.startswith("USDT:")]
    text = " | ".join(lines[-8:])
    return text[-_STDERR_TAIL:]


def _oom_kill_count() -> int:
    """How many processes the kernel's OOM killer ended in this cgroup so far (v2 only;
    0 where it cannot tell)."""
    try:
        with open("/sys/fs/cgroup/memory.events", encoding="ascii") as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0
