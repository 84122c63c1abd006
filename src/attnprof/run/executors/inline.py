"""The inline executor: the point runs in this process, as a plain call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from attnprof.run.executors import Job, OnDone, run_one_at_a_time

if TYPE_CHECKING:
    from attnprof.models.loaded import LoadedModel
    from attnprof.models.locate import Located
    from attnprof.record.compare import CompareRecord
    from attnprof.record.model import ModelRecord
    from attnprof.run.executors import OnModelRecord
    from attnprof.run.model import ModelProgress
    from attnprof.run.point import ModelPoint, Point
    from attnprof.run.point_runner import OnRecord, Progress
    from attnprof.variants import Variant
    from attnprof.workload.model_spec import ModelSpec

__all__ = ["InlineExecutor"]

T = TypeVar("T")
R = TypeVar("R")


class InlineExecutor:
    """Run the point here: no isolation, no start-up cost."""

    name = "inline"
    remote = False

    def __init__(self, variants: Sequence[Variant] = (), *,
                 model: tuple[ModelSpec, LoadedModel, Located] | None = None) -> None:
        #: Variants already resolved, by name: objects made in this process (a caller's
        #: own :class:`~attnprof.variants.Variant`), which a name alone cannot find again.
        self._resolved = {v.name: v for v in variants}
        #: A model already built and located here (:func:`~attnprof.run.model.
        #: prepare_model`), run as it is instead of being built again from its spec.
        self._model = model

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Measure ``point`` in this process."""
        # Here, not at the top: reading a rank set (map_calls) runs no point.
        from attnprof.run.point_runner import run_point

        names = point.variants
        variants = ([self._resolved[n] for n in names]
                    if all(n in self._resolved for n in names) else None)
        return run_point(point, variants, progress=progress, on_record=on_record)

    def run_model(self, point: ModelPoint, *, progress: ModelProgress | None = None,
                  on_record: OnModelRecord | None = None) -> ModelRecord:
        """Profile the model in this process (the one given when built, if any)."""
        from attnprof.run.model import profile_model

        return profile_model(spec=point.spec, settings=point.settings, progress=progress,
                             on_record=on_record, prepared=self._model, only=point.only)

    def run_points(self, next_job: Callable[[], Job | None], on_done: OnDone,
                   progress: Progress | None = None) -> None:
        """The points one at a time, each as :meth:`run` runs it."""
        run_one_at_a_time(self, next_job, on_done, progress)

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
