"""``attnprof model --executor process``: each implementation in a worker process.

The parent (:func:`run_model_in_workers`) starts a worker with the model's point; the
worker (``python -m attnprof.run.executors.model_workers FD``) builds the model again from
its spec, profiles the implementations it is given and reports on the pipe ``FD`` as the
point worker does (:mod:`attnprof.run.executors.worker`): ``P`` + ``[run, what]`` progress
(``run`` is ``implementation/phase``), ``R`` + the model record after every run, then its
last word. When a worker dies — a segfault, the OOM killer, a hang past the time limits —
the implementation it was running gets a row with that status (``crashed``, ``oom``,
``timeout``) in every phase it had not finished, and the implementations after it run in a
fresh worker; the rows that finished are kept as they came.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from attnprof.errors import UsageError
from attnprof.record.model import ModelRecord, PhaseRun
from attnprof.run.executors.endings import Attempt, how_it_ended
from attnprof.run.executors.worker import finish, serve, start
from attnprof.run.point import ModelPoint

if TYPE_CHECKING:
    from attnprof.run.executors import OnModelRecord
    from attnprof.run.model import ModelProgress

#: One worker given a payload, watched to its end
#: (:meth:`~attnprof.run.executors.process.ProcessExecutor.attempt`).
StartWorker = Callable[..., Attempt]

__all__ = ["main", "run_model_in_workers"]


def run_model_in_workers(attempt: StartWorker, point: ModelPoint,
                         progress: ModelProgress | None,
                         on_record: OnModelRecord | None) -> ModelRecord:
    """The model's record, each implementation measured in a worker (``attempt``)."""
    from attnprof.run.model_rows import merge_runs

    phases = point.spec.phases
    runs: dict[tuple[str, str], PhaseRun] = {}
    header: ModelRecord | None = None
    impls = list(point.spec.implementations)  # empty: the model's own, named by the worker

    def publish(record: ModelRecord) -> None:
        nonlocal header
        header = record
        for r in record.runs:
            runs[(r.implementation, r.phase)] = r
            if r.implementation not in impls:
                impls.append(r.implementation)
        if on_record is not None:
            on_record(merge_runs(header, list(runs.values()), impls, phases, final=False))

    only: tuple[str, ...] | None = None
    while True:
        ended = attempt(msgspec.json.encode(point.replace(only=only)), progress, publish,
                        worker=__name__, record_type=ModelRecord)
        if ended.usage_error is not None:
            raise UsageError(ended.usage_error)
        if ended.interrupted:
            raise ended.stop or KeyboardInterrupt()
        if not ended.done:
            running = ended.phase[0].split("/")[0] if ended.phase else None
            status, how = how_it_ended(ended)
            if ended.phase and not ended.over_limit:
                how += f" while {ended.phase[1]}"
            if ended.stderr_tail:
                how += f"; worker stderr: {ended.stderr_tail}"
            if running is not None and running not in impls:
                impls.append(running)
            # Died before naming an implementation: nothing tells them apart.
            culprits = [running] if running is not None else [
                i for i in impls if any((i, p) not in runs for p in phases)]
            for impl in culprits:
                for phase in phases:
                    if (impl, phase) not in runs:
                        runs[(impl, phase)] = PhaseRun(implementation=impl, phase=phase,
                                                       status=status, reason=how)
                        if progress is not None:
                            progress(f"{impl}/{phase}", "done")
            if header is not None and on_record is not None:
                on_record(merge_runs(header, list(runs.values()), impls, phases,
                                     final=False))
        left = tuple(i for i in impls if any((i, p) not in runs for p in phases))
        if ended.done or not left or (header is None and not impls):
            break
        only = left
    if header is None:  # every worker died before its first record: nothing to show
        raise UsageError(f"the model could not be profiled in a worker: "
                         f"{how_it_ended(ended)[1]}; run it with --executor inline to see "
                         "the error")
    final = merge_runs(header, list(runs.values()), impls, phases, final=True)
    if on_record is not None:
        on_record(final)
    return final


def main(argv: list[str]) -> int:
    """Profile the model point from stdin, reporting on the pipe named in ``argv``."""
    conn = start(argv)
    point = msgspec.json.decode(sys.stdin.buffer.read(), type=ModelPoint)

    def progress(run: str, what: str) -> None:
        conn.send_bytes(b"P" + msgspec.json.encode([run, what]))

    def on_record(record: ModelRecord) -> None:
        conn.send_bytes(b"R" + msgspec.json.encode(record))

    from attnprof.run.model import profile_model

    return serve(conn, lambda: profile_model(spec=point.spec, settings=point.settings,
                                             progress=progress, on_record=on_record,
                                             only=point.only))


if __name__ == "__main__":
    finish(main(sys.argv[1:]))
