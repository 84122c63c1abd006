"""Executors: where a point runs. Each takes a :class:`~attnprof.run.point.Point` and
returns its record, reporting progress and every intermediate record on the way.

* ``inline`` (:class:`InlineExecutor`): here, in this process — today's behaviour.
* ``process`` (:class:`ProcessExecutor`): in a fresh worker process; a variant that kills
  its worker (segfault, ``os._exit``, the kernel's OOM killer) or hangs becomes a row with
  that status, and the point's other variants still run.
* ``ray`` (:class:`~attnprof.run.executors.ray.RayExecutor`): each point a Ray task on a
  cluster (or a local instance), run there through the process executor. Ray is an
  optional extra, imported only when this executor is asked for.

Every executor also profiles whole models (:meth:`Executor.run_model`, ``attnprof model``):
``inline`` here, ``process`` in worker processes where an implementation that segfaults,
hangs or runs out of memory becomes rows with that status and the others keep theirs.

Every executor runs batches of points (:meth:`Executor.run_points`, what a sweep calls):
Ray several at once, the others one at a time (:func:`run_one_at_a_time`). ``remote``
says whether points run on other machines (each then measures its own node's ceilings).

Every executor also runs batches of small calls (:meth:`Executor.map_calls`): reading a
distributed run's traces, one rank per call — in this process (``inline``), in local
worker processes (``process``, :mod:`attnprof.run.executors.pool`) or as Ray tasks
(``ray``), each call's data read where it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from attnprof.errors import UsageError

if TYPE_CHECKING:
    from attnprof.record.compare import CompareRecord
    from attnprof.record.model import ModelRecord
    from attnprof.run.model import ModelProgress
    from attnprof.run.point import ModelPoint, Point
    from attnprof.run.point_runner import OnRecord, Progress

__all__ = ["EXECUTORS", "Executor", "Job", "OnDone", "OnModelRecord", "get_executor",
           "run_one_at_a_time"]

T = TypeVar("T")
R = TypeVar("R")

#: A point to run and its index in the caller's list (a sweep's grid).
Job = tuple[int, "Point"]
#: Called as ``on_done(index, record, node)`` as each point ends (``node``: the machine it
#: ran on, when the executor knows).
OnDone = Callable[[int, "CompareRecord", "str | None"], None]
#: Called with a model run's record after every implementation's phase.
OnModelRecord = Callable[["ModelRecord"], None]


class Executor(Protocol):
    """Runs a point somewhere and returns its record."""

    name: str
    #: Whether points run on other machines, each measuring its own node's ceilings.
    remote: bool

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Measure ``point``; ``on_record`` sees the record after every variant."""
        ...

    def run_model(self, point: ModelPoint, *, progress: ModelProgress | None = None,
                  on_record: OnModelRecord | None = None) -> ModelRecord:
        """Profile the model ``point`` names; ``on_record`` sees the record after every
        run (implementation and phase)."""
        ...

    def run_points(self, next_job: Callable[[], Job | None], on_done: OnDone,
                   progress: Progress | None = None) -> None:
        """Run the points ``next_job`` hands out until it returns ``None`` (asked again
        as room frees up), handing each record to ``on_done`` as it ends."""
        ...

    def map_calls(self, fn: Callable[[T], R], items: Sequence[T], *,
                  failed: Callable[[T, str], R], workers: int | None = None,
                  on_result: Callable[[int, R], None] | None = None) -> list[R]:
        """``[fn(item) for item in items]``, run where this executor runs work, up to
        ``workers`` at once (default: what it has room for), results in ``items``' order.

        ``fn`` must be a module-level function, and items and results picklable: they
        may travel to another process or machine. A call that raises, or whose worker or
        task is lost, gives ``failed(item, reason)`` instead, so one bad item never costs
        the others. ``on_result(index, result)`` hears of each result as it arrives.
        """
        ...


#: Executor names and the modules/classes that implement them (imported when used).
EXECUTORS: dict[str, tuple[str, str]] = {
    "inline": ("attnprof.run.executors.inline", "InlineExecutor"),
    "process": ("attnprof.run.executors.process", "ProcessExecutor"),
    "ray": ("attnprof.run.executors.ray", "RayExecutor"),
}


def get_executor(name: str, **options: Any) -> Executor:
    """The executor called ``name``, built with ``options``."""
    if name not in EXECUTORS:
        raise UsageError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
    import importlib

    module, cls = EXECUTORS[name]
    return getattr(importlib.import_module(module), cls)(**options)


def run_one_at_a_time(executor: Executor, next_job: Callable[[], Job | None],
                      on_done: OnDone, progress: Progress | None = None) -> None:
    """:meth:`Executor.run_points` for an executor that runs one point at a time."""
    while (job := next_job()) is not None:
        index, point = job
        on_done(index, executor.run(point, progress=progress), None)
