"""The inline executor: the point runs in this process, as a plain call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from attnprof.run.compare import run_point

if TYPE_CHECKING:
    from attnprof.record.compare import CompareRecord
    from attnprof.run.compare import OnRecord, Progress
    from attnprof.run.point import Point

__all__ = ["InlineExecutor"]

T = TypeVar("T")
R = TypeVar("R")


class InlineExecutor:
    """Run the point here: no isolation, no start-up cost."""

    name = "inline"

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Measure ``point`` in this process."""
        return run_point(point, progress=progress, on_record=on_record)

    def map_calls(self, fn: Callable[[T], R], items: Sequence[T], *,
                  failed: Callable[[T, str], R], workers: int | None = None,
                  on_result: Callable[[int, R], None] | None = None) -> list[R]:
        """Each call here, one after another (``workers`` is ignored)."""
        results = []
        for index, item in enumerate(items):
            try:
                result = fn(item)
            except Exception as exc:  # one bad item is its own row, as in the other executors
                result = failed(item, f"attnprof failed on it ({type(exc).__name__}: {exc}); "
                                      "please report this with the file")
            results.append(result)
            if on_result is not None:
                on_result(index, result)
        return results
