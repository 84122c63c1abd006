"""Executors: where a point runs. Each takes a :class:`~attnprof.run.point.Point` and
returns its record, reporting progress and every intermediate record on the way.

* ``inline`` (:class:`InlineExecutor`): here, in this process — today's behaviour.
* ``process`` (:class:`ProcessExecutor`): in a fresh worker process; a variant that kills
  its worker (segfault, ``os._exit``, the kernel's OOM killer) or hangs becomes a row with
  that status, and the point's other variants still run.
* ``ray`` (:class:`~attnprof.run.executors.ray.RayExecutor`): each point a Ray task on a
  cluster (or a local instance), run there through the process executor. Ray is an
  optional extra, imported only when this executor is asked for.

An executor may also offer ``run_points(next_job, on_done, progress)`` to run several
points at once (Ray does); a sweep uses it when present and runs points one at a time
otherwise.

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
    from attnprof.run.compare import OnRecord, Progress
    from attnprof.run.point import Point

__all__ = ["EXECUTORS", "Executor", "get_executor"]

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs a point somewhere and returns its record."""

    name: str

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Measure ``point``; ``on_record`` sees the record after every variant."""
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
