"""The worker side of :class:`~attnprof.run.executors.process.ProcessExecutor`.

``python -m attnprof.run.executors.worker FD [MEMORY_LIMIT]`` reads one point (JSON) from
stdin, measures it in this process and writes framed messages to the pipe ``FD``:

* ``P`` + ``[variant, phase]``: progress (the parent knows what ran when a worker dies);
* ``R`` + record JSON: the record after every variant;
* ``D``: done; ``U`` + text: a usage error; ``I``: interrupted; ``E`` + traceback: a bug.

Only the record (and these small notes) crosses the process boundary.
"""

from __future__ import annotations

import sys
import traceback
from multiprocessing.connection import Connection

import msgspec

from attnprof.errors import UsageError
from attnprof.record.compare import CompareRecord
from attnprof.run.point import Point

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Run the point from stdin, reporting on the pipe named in ``argv``."""
    conn = Connection(int(argv[0]), readable=False)
    _exit_with_parent()
    point = msgspec.json.decode(sys.stdin.buffer.read(), type=Point)
    if len(argv) > 1 and argv[1] != "-":
        _limit_memory(int(argv[1]), point.workload.device)

    def progress(variant: str, phase: str) -> None:
        conn.send_bytes(b"P" + msgspec.json.encode([variant, phase]))

    def on_record(record: CompareRecord) -> None:
        conn.send_bytes(b"R" + msgspec.json.encode(record))

    from attnprof.run.compare import run_point

    try:
        run_point(point, progress=progress, on_record=on_record)
    except UsageError as exc:
        conn.send_bytes(b"U" + str(exc).encode())
        return 2
    except KeyboardInterrupt:
        conn.send_bytes(b"I")
        return 130
    except BaseException:  # a bug, or user code raising SystemExit: the parent reports it
        conn.send_bytes(b"E" + traceback.format_exc().encode())
        return 1
    conn.send_bytes(b"D")
    return 0


def _exit_with_parent() -> None:
    """End this worker when the process that started it is gone (killed with SIGKILL, say):
    nobody would read its results, and a hung variant would otherwise run on forever."""
    import os
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="attnprof-parent-watch", daemon=True).start()


def _limit_memory(limit: int, device: str) -> None:
    """Let this process map at most ``limit`` more bytes than it holds once torch is
    loaded, so running out of memory raises here (an ``oom`` row) instead of waking the
    kernel's OOM killer. (torch's libraries alone map gigabytes of address space.) On a
    CUDA device the cap is the caching allocator's share of the device's memory instead:
    CUDA maps far more address space than it uses, so an address-space cap would break it."""
    import resource

    import torch

    if device.startswith("cuda"):
        total = torch.cuda.get_device_properties(device).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total), device)
        return
    torch.ones(1).add_(1)  # start the allocator and the intra-op thread pool first
    with open("/proc/self/status", encoding="ascii") as fh:
        mapped = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (mapped + limit, mapped + limit))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
