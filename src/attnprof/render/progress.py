"""A progress bar over variants, shown on stderr while a comparison runs."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from attnprof.formatting import safe_text


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
            # The description is rendered as markup: a user's variant name is data.
            text = escape(safe_text(f"{variant}: {phase}", limit=120))
            self._progress.update(self._task, description=text)

    def __enter__(self) -> ComparisonProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()
