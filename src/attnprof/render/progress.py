"""Progress bars on stderr: over variants while a comparison runs, over (implementation,
phase) runs while a model is profiled."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ComparisonProgress:
    """A bar of two steps per variant: built and warmed up (``ready``), then ``done``.

    ``update(variant, phase)`` is the runner's progress callback; any other phase (building,
    compiling, a timing round, tracing) only changes the description.
    """

    def __init__(self, console: Console, variants: list[str]) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self._task = self._progress.add_task("starting", total=2 * len(variants))

    def update(self, variant: str, phase: str) -> None:
        if phase in ("ready", "done"):
            self._progress.advance(self._task)
        else:
            self._progress.update(self._task, description=f"{variant}: {phase}")

    def __enter__(self) -> ComparisonProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()


class ModelRunProgress:
    """A bar of one step per (implementation, phase) run of ``attnprof model``.

    ``update(run, what)`` is the model runner's progress callback: ``done`` advances the
    bar, anything else (warming up, a timing round, tracing) only changes the description.
    """

    def __init__(self, runs: list[str]) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self._task = self._progress.add_task("building the model", total=len(runs))

    def update(self, run: str, what: str) -> None:
        if what == "done":
            self._progress.advance(self._task)
        else:
            self._progress.update(self._task, description=f"{run}: {what}")

    def __enter__(self) -> ModelRunProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()
