"""The worker side of :class:`~attnprof.run.executors.process.ProcessExecutor`.

``python -m attnprof.run.executors.worker FD [MEMORY_LIMIT]`` reads one point (JSON) from
stdin, measures it in this process and writes framed messages to the pipe ``FD``:

* ``P`` + ``[variant, phase]``: progress (the parent knows what ran when a worker dies,
  and enforces ``--variant-timeout`` on each phase from outside);
* ``K`` + row JSON: a variant's row as it stands after each of its phases (what the parent
  keeps if the variant then takes the worker down);
* ``R`` + record JSON: the record after every variant;
* ``D``: done; ``U`` + text: a usage error; ``I``: interrupted; ``E`` + traceback: a bug.

Only the record (and these small notes) crosses the process boundary.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import NoReturn

import msgspec

from attnprof.errors import UsageError
from attnprof.exit_codes import ExitCode
from attnprof.record.compare import CompareRecord, VariantResult
from attnprof.run.point import Point
from attnprof.signals import exit_status, stop_signals_as_interrupts

__all__ = ["die_with_parent", "finish", "main", "serve", "start"]

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def main(argv: list[str]) -> int:
    """Run the point from stdin, reporting on the pipe named in ``argv``."""
    conn = start(argv)
    point = msgspec.json.decode(sys.stdin.buffer.read(), type=Point)
    limit = int(argv[1]) if len(argv) > 1 and argv[1] != "-" else None

    def progress(variant: str, phase: str) -> None:
        conn.send_bytes(b"P" + msgspec.json.encode([variant, phase]))

    def on_record(record: CompareRecord) -> None:
        conn.send_bytes(b"R" + msgspec.json.encode(record))

    def on_kept(row: VariantResult) -> None:
        conn.send_bytes(b"K" + msgspec.json.encode(row))

    from attnprof.run.point_runner import run_point

    # The cap is set once attnprof's own memory is in place, so it bounds the variants; a
    # variant that exceeds it ends this worker's run, and the parent runs the others in a
    # fresh worker.
    return serve(conn, lambda: run_point(
        point, progress=progress, on_record=on_record, on_kept=on_kept,
        before_variants=None if limit is None else
        lambda: _limit_memory(limit, point.workload.device, dynamo=_loads_dynamo(point)),
        stop_after_oom=limit is not None))


def start(argv: list[str]) -> Connection:
    """What every worker does first: die with its parent, take Ctrl-C as Python does, and
    open the pipe to the parent named in ``argv``."""
    die_with_parent()
    # The parent stops this worker with SIGINT so it hands over what it measured. A parent
    # started with SIGINT ignored (a background job of a script, nohup) passes the ignore on
    # through exec, and the worker would then run on past its grace time and lose its rows.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return Connection(int(argv[0]), readable=False)


def serve(conn: Connection, work: Callable[[], object]) -> int:
    """Run ``work`` and tell the parent how it ended, as its last word on ``conn``: ``D``
    done, ``U`` a usage error (its message), ``I`` stopped, ``E`` a bug (its traceback);
    the worker's exit status.

    SIGTERM (Slurm signals every process of a job; the parent stops a hung worker with
    it) hands over what was measured, as Ctrl-C does. Whatever user code raises is its
    row (the work isolates it; a KeyboardInterrupt that no signal caused included); an
    exception from anywhere else is a failure the parent reports.
    """
    with stop_signals_as_interrupts():
        try:
            work()
        except UsageError as exc:
            conn.send_bytes(b"U" + str(exc).encode())
            return ExitCode.USAGE
        except KeyboardInterrupt as exc:
            conn.send_bytes(b"I")
            return exit_status(exc)
        except BaseException:  # a bug: the parent reports it
            conn.send_bytes(b"E" + traceback.format_exc().encode())
            return ExitCode.FAILED
    conn.send_bytes(b"D")
    return ExitCode.OK


def die_with_parent() -> None:
    """Have Linux send this worker SIGTERM when its parent dies (``kill -9`` of attnprof),
    so an orphan does not go on measuring for minutes; elsewhere, nothing."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def _loads_dynamo(point: Point) -> bool:
    """Whether measuring ``point`` imports torch._dynamo and torch._inductor (about 70 MB
    of address space, and seconds): a compiled or flex_attention built-in variant does,
    and so does torch.profiler's trace capture. Torch's code, not the variants' memory."""
    from attnprof.variants import BUILTINS, OPT_IN

    # An opt-in name may carry a block size (paged-flex@64): its kind decides.
    builtins = (BUILTINS.get(name) or OPT_IN.get(name.partition("@")[0])
                for name in point.variants)
    return point.settings.trace_dir is not None or any(
        v is not None and (v.compiled or v.family == "flex") for v in builtins)


def _limit_memory(limit: int, device: str, *, dynamo: bool = False) -> None:
    """Let this process map at most ``limit`` more bytes than it holds now — torch loaded,
    the ceilings measured, the inputs, their guard copy and the float64 references made
    (:func:`~attnprof.run.compare.run_point` calls this just before the variants) — so
    that the cap bounds the variants and running out of it raises here (an ``oom`` row)
    instead of waking the kernel's OOM killer. (torch's libraries alone map gigabytes of
    address space.) On a CUDA device the cap is the caching allocator's share of the
    device's memory instead: CUDA maps far more address space than it uses, so an
    address-space cap would break it. (Processes the variant starts inherit the cap:
    torch.compile's workers and compilers may fail under a small one.)"""
    import resource

    import torch

    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        total = torch.cuda.get_device_properties(device).total_memory
        held = torch.cuda.memory_reserved(device)
        torch.cuda.set_per_process_memory_fraction(min(1.0, (held + limit) / total), device)
        return
    # What every variant uses, loaded before the cap so that the cap is about the variants'
    # memory: the allocator and intra-op threads, SDPA's backends, the profiler (the
    # memory measurement) and, where the point needs them (``dynamo``, see
    # _loads_dynamo), torch._dynamo and torch._inductor.
    import torch.nn.attention
    import torch.nn.functional

    if dynamo:
        import torch._inductor  # torch._dynamo with it

    from attnprof.measure.allocator import release_free_memory
    from attnprof.measure.memory import profile_step

    profile_step(lambda: torch.ones(64).add_(1), "cpu")
    release_free_memory()  # what the heap holds free would be room beyond the cap
    with open("/proc/self/status", encoding="ascii") as fh:
        mapped = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (mapped + limit, mapped + limit))


def finish(status: int) -> NoReturn:
    """Exit with ``status`` once the last word is sent, what is still alive taken out of
    the cyclic collector's view first (:func:`gc.freeze`), as the ``attnprof`` command
    does (:func:`attnprof.cli.main.console_main`): with torch loaded, shutdown's full
    collections take half a second of every worker, while its parent waits for the exit
    status. Shutdown itself (atexit hooks, flushing) runs as usual."""
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    finish(main(sys.argv[1:]))
