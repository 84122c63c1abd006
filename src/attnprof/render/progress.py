"""A progress bar over variants, shown on stderr while a comparison runs."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ComparisonProgress:
    """``update(variant, phase)`` advances the bar when a new variant starts."""

    def __init__(self, console: Console, variants: list[str]) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self._task = self._progress.add_task("starting", total=len(variants))
        self._current: str | None = None

    def update(self, variant: str, phase: str) -> None:
        if variant != self._current:
            if self._current is not None:
                self._progress.advance(self._task)
            self._current = variant
        self._progress.update(self._task, description=f"{variant}: {phase}")

    def __enter__(self) -> ComparisonProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()
