"""The Ray executor: each point is a Ray task, on whichever node of the cluster has room.

Inside the task the point runs through the process executor, so a variant that segfaults
or hangs is still a ``crashed`` or ``timeout`` row and the rest of the point still runs.
Only JSON crosses the wire: the point goes out, the comparison record comes back with the
node it ran on; the record's environment is that node's, threads included.

A task asks for one GPU on CUDA (Ray sets ``CUDA_VISIBLE_DEVICES``, so the point sees its
GPU as ``cuda``) and, on CPU, the CPUs a point would use on every thread: the threads this
process's torch uses (or the sweep's ``--threads``, if more), at most a node's CPUs. Its
worker runs the sweep's ``--threads`` (1 by default on CPU; ``all``: torch's count), given
exactly that many (``OMP_NUM_THREADS``), so a point measures the same on Ray as in a local
worker, and each point's environment records the threads it really had. Reserving the
whole count even for one thread keeps two points off a node that would hold only one
before ``--threads`` defaulted to 1: points that share a node share its memory bandwidth
and caches and disturb each other's timings. For CPU timings, give each node room for one
point.

Ray does not retry a point (``max_retries=0``): a task whose worker or node dies is
``crashed`` with Ray's reason, once, and ``--resume`` runs it again — a silent retry would
measure a point twice and report it once.

The cluster is the one at ``address`` (``--ray-address``), else ``RAY_ADDRESS``, else the
one this process is already connected to, else a new local instance. A cluster that
requires Ray's token authentication (``ray start --head`` turns it on where a token exists)
is reached with ``RAY_AUTH_MODE=token`` and the head's token (``~/.ray/auth_token``, or
``RAY_AUTH_TOKEN``): Ray sends it to an explicit address only when asked to, and so does
attnprof; without it the connection is refused in a second, in one line that says what to
set, naming the flag or variable the address came from. Ray is an optional extra (``pip
install 'attnprof[ray]'``), imported only here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from attnprof.errors import UsageError
from attnprof.install import install_command
from attnprof.record.compare import CompareRecord, ProfileRecord, Status
from attnprof.record.sweep import LOST_TASK
from attnprof.run.executors.process import DEFAULT_IDLE_TIMEOUT_S, PREPARE_S
from attnprof.run.point import Point
from attnprof.run.rows import status_row
from attnprof.variants import resolve_variants

if TYPE_CHECKING:
    from attnprof.record.model import ModelRecord
    from attnprof.run.executors import OnModelRecord
    from attnprof.run.model import ModelProgress
    from attnprof.run.point import ModelPoint
    from attnprof.run.point_runner import OnRecord, Progress

__all__ = ["RayExecutor"]

T = TypeVar("T")
R = TypeVar("R")

#: Seconds a task may outlive its point's own time limit before the driver gives up on it
#: (the node died, or Ray lost the task): the worker's start and Ray's scheduling.
_TASK_GRACE_S = 120.0


class RayExecutor:
    """Run points as Ray tasks; ``run_points`` keeps up to ``max_in_flight`` running."""

    name = "ray"
    #: Points run on other machines: each measures its own node's ceilings.
    remote = True

    def __init__(self, *, address: str | None = None, timeout_s: float | None = None,
                 idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
                 memory_limit_bytes: int | None = None,
                 max_in_flight: int | None = None, threads: int | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        #: Where the address came from, as the user gave it: errors name it.
        self.source = "--ray-address" if address else "RAY_ADDRESS"
        self.timeout_s = timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.memory_limit_bytes = memory_limit_bytes
        self.max_in_flight = max_in_flight
        #: Threads of a CPU point's worker (None: this process's torch threads).
        self.threads = threads

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Run one point as a Ray task and wait for it."""
        jobs = [(0, point)]
        out: list[CompareRecord] = []
        self.run_points(lambda: jobs.pop() if jobs else None,
                        lambda _i, record, _node: out.append(record), progress)
        if on_record is not None:
            on_record(out[0])
        return out[0]

    def run_model(self, point: ModelPoint, *, progress: ModelProgress | None = None,
                  on_record: OnModelRecord | None = None) -> ModelRecord:
        """Not on Ray: a model run is one long job on one machine; run it ``inline`` or in
        a local worker (``process``)."""
        raise UsageError("attnprof model runs on the inline or process executor, not ray; "
                         "use --executor process to isolate each implementation")

    def run_points(self, next_job: Callable[[], tuple[int, Point] | None],
                   on_done: Callable[[int, CompareRecord, str | None], None],
                   progress: Progress | None = None) -> None:
        """Submit jobs while the cluster has room, hand each record back as it arrives."""
        ray = self._connect()
        # No retries: a point whose task dies is reported once, as it ended.
        task = ray.remote(max_retries=0, retry_exceptions=False)(_run_point_task)
        threads = reserve = 0  # known once the first point says its settings
        limit = self.max_in_flight or 0  # known once the first point says its device
        in_flight: dict[Any, tuple[int, Point, float]] = {}
        try:
            while True:
                while (len(in_flight) < limit or not limit) and (job := next_job()) is not None:
                    index, point = job
                    # A sweep's points share their settings: its --threads sizes each task.
                    threads = threads or _threads(ray, self.threads or point.settings.threads)
                    # ... and each reserves the CPUs of a point on every thread, so one-thread
                    # points do not share a node's memory bandwidth and caches unasked.
                    reserve = reserve or max(threads, _threads(ray, None))
                    limit = limit or _slots(ray, point.workload.device_type, reserve)
                    sent = _for_task(point)
                    cpu = sent.workload.device_type != "cuda"
                    ref = task.options(**_resources(sent, reserve)).remote(
                        msgspec.json.encode(sent), self.timeout_s, self.idle_timeout_s,
                        self.memory_limit_bytes, threads if cpu else None)
                    in_flight[ref] = (index, point, time.monotonic())
                    if progress is not None:
                        progress("ray", f"{len(in_flight)} point(s) running on the cluster")
                if not in_flight:
                    return
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                for ref in ready:
                    index, point, _ = in_flight.pop(ref)
                    record, node = self._collect(ray, ref, point)
                    on_done(index, record, node)
                for ref in self._overdue(in_flight):
                    index, point, _ = in_flight.pop(ref)
                    ray.cancel(ref, force=True)
                    on_done(index, _failed(point, "timeout", "the Ray task did not come back "
                                           "within its time limit and was cancelled"), None)
        except BaseException:
            for ref in in_flight:  # Ctrl-C or a usage error: stop what is still running
                ray.cancel(ref, force=True)
            raise

    def map_calls(self, fn: Callable[[T], R], items: Sequence[T], *,
                  failed: Callable[[T, str], R], workers: int | None = None,
                  on_result: Callable[[int, R], None] | None = None) -> list[R]:
        """Each call a Ray task of one CPU, up to ``workers`` in flight (default: the
        cluster's CPUs). The task runs on whichever node has room and reads its item's
        data there (paths must name shared storage). A task that raises, or whose worker
        or node is lost, gives ``failed(item, reason)``."""
        ray = self._connect()
        task = ray.remote(num_cpus=1, max_retries=0, retry_exceptions=False)(fn)
        limit = workers or _slots(ray, "cpu", 1)
        results: dict[int, R] = {}
        in_flight: dict[Any, int] = {}
        next_index = 0
        try:
            while next_index < len(items) or in_flight:
                while next_index < len(items) and len(in_flight) < limit:
                    in_flight[task.remote(items[next_index])] = next_index
                    next_index += 1
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    index = in_flight.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        result = failed(items[index], f"attnprof failed on it in its Ray task "
                                                      f"({_last_line(exc)})")
                    except ray.exceptions.RayError as exc:  # the worker or node died
                        result = failed(items[index], f"its Ray task was lost "
                                                      f"({type(exc).__name__}: "
                                                      f"{_last_line(exc)})")
                    results[index] = result
                    if on_result is not None:
                        on_result(index, result)
        except BaseException:
            for ref in in_flight:  # Ctrl-C: stop what is still running
                ray.cancel(ref, force=True)
            raise
        return [results[i] for i in range(len(items))]

    def _overdue(self, in_flight: dict[Any, tuple[int, Point, float]]) -> list[Any]:
        if self.timeout_s is None:
            return []
        now = time.monotonic()
        return [ref for ref, (_, _, sent) in in_flight.items()
                if now - sent > self.timeout_s + PREPARE_S + _TASK_GRACE_S]

    def _collect(self, ray: Any, ref: Any, point: Point) -> tuple[CompareRecord, str | None]:
        try:
            payload, node = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, UsageError):
                raise UsageError(str(cause)) from None
            return _failed(point, "error", f"the Ray task failed: {_last_line(exc)}"), None
        except ray.exceptions.RayError as exc:  # the task's worker or node died
            return _failed(point, "crashed", f"{LOST_TASK} (not retried): "
                           f"{type(exc).__name__}: {_last_line(exc)}"), None
        record = msgspec.json.decode(payload, type=CompareRecord | ProfileRecord)
        return record, node

    def _connect(self) -> Any:
        try:
            import ray
        except ImportError:
            raise UsageError("--executor ray needs Ray; install it with "
                             f"{install_command('ray')}") from None
        if ray.is_initialized():
            return ray
        given = f"{self.source} {self.address}" if self.address else "a local Ray instance"
        if self.address:
            _check_reachable(self.address, given)
            _check_authenticated(self.address, given)
        try:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     configure_logging=True, logging_level=logging.ERROR)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            if isinstance(exc, ray.exceptions.AuthenticationError):
                raise UsageError(_auth_advice(given, refused=False)) from None
            raise UsageError(f"{given}: cannot connect to a Ray cluster ({_last_line(exc)}); "
                             f"{_START_ONE}") from None
        return ray


#: What to do when no cluster answers.
_START_ONE = ("start one with 'ray start --head' and pass the address it prints, or leave "
              "the address out for a local instance")


def _check_reachable(address: str, given: str) -> None:
    """Refuse an address nothing listens on at once: Ray itself retries for minutes."""
    import socket

    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return  # "auto", a bare host: Ray resolves those itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UsageError(f"{given}: cannot connect to a Ray cluster "
                         f"({exc.strerror or exc}); {_START_ONE}") from None


def _check_authenticated(address: str, given: str) -> None:
    """Ask the cluster once whether it accepts this process (Ray's own connection retries
    an unauthenticated one for 20 s, printing a line a second): refuse in one line, saying
    what to set, when it requires a token this process does not send or has wrong."""
    import ray

    try:  # Ray's GCS client: not public API, so when it is not there, skip the question
        from ray._raylet import GcsClient  # type: ignore[attr-defined]
    except ImportError:
        return
    with _quiet_stderr():
        try:
            GcsClient(address=address.removeprefix("ray://"))
        except ray.exceptions.AuthenticationError:
            sending = os.environ.get("RAY_AUTH_MODE", "").lower() == "token"
            raise UsageError(_auth_advice(given, refused=sending)) from None
        except Exception:  # anything else: ray.init says it in full
            return


def _auth_advice(given: str, *, refused: bool) -> str:
    """The one line for a cluster that wants Ray's authentication token."""
    if refused:
        return (f"{given}: the Ray cluster refused this machine's authentication token; set "
                "RAY_AUTH_TOKEN to the one its head prints with 'ray get-auth-token'")
    return (f"{given}: the Ray cluster requires an authentication token (Ray's token "
            "authentication, which 'ray start --head' turns on); set RAY_AUTH_MODE=token "
            "and, where the head's ~/.ray/auth_token is not at hand, RAY_AUTH_TOKEN to what "
            "'ray get-auth-token' prints on the head")


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Keep Ray's C++ client from writing its retry warnings to this terminal."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # stderr replaced (pytest capture)
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), fd)
            yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)


def _run_point_task(point_json: bytes, timeout_s: float | None,
                    idle_timeout_s: float | None, memory_limit_bytes: int | None,
                    threads: int | None) -> tuple[bytes, str]:
    """The Ray task: run one point in a worker process on this node, return its record."""
    import ray

    from attnprof.run.executors.process import ProcessExecutor

    point = msgspec.json.decode(point_json, type=Point)
    executor = ProcessExecutor(timeout_s=timeout_s, idle_timeout_s=idle_timeout_s,
                               memory_limit_bytes=memory_limit_bytes, threads=threads)
    record = executor.run(point)
    return msgspec.json.encode(record), str(ray.get_runtime_context().get_node_id())


def _for_task(point: Point) -> Point:
    """The point as a task runs it: a CUDA point uses the GPU Ray gives the task."""
    if point.workload.device.startswith("cuda:"):
        return point.replace(workload=point.workload.replace(device="cuda"))
    return point


def _resources(point: Point, threads: int) -> dict[str, float]:
    if point.workload.device_type == "cuda":
        return {"num_gpus": 1, "num_cpus": 1}
    return {"num_cpus": threads}


def _threads(ray: Any, asked: int | None) -> int:
    """Threads of a CPU point's worker: ``asked``, else this process's torch threads (what
    a local worker gets), at most the CPUs of the cluster's largest node."""
    import torch

    wanted = asked or torch.get_num_threads()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    largest = max((int(n.get("Resources", {}).get("CPU", 0)) for n in nodes), default=0)
    return max(1, min(wanted, largest) if largest else wanted)


def _slots(ray: Any, device_type: str, threads: int) -> int:
    """Points the cluster can run at once: its GPUs for CUDA points, else its CPUs over
    the threads each point takes."""
    resources = ray.cluster_resources()
    if device_type == "cuda":
        return max(1, int(resources.get("GPU", 1)))
    return max(1, int(resources.get("CPU", 1)) // threads)


def _failed(point: Point, status: Status, reason: str) -> CompareRecord:
    """A record for a point whose task never reported: every variant has ``status``."""
    from attnprof.run.point import empty_record

    record = empty_record(point)
    record.results = [status_row(v, status, reason) for v in resolve_variants(point.variants)]
    return record


def _last_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(exc).__name__
