"""Progress bars on stderr: over variants while a comparison runs, over points while a
sweep runs, over (implementation, phase) runs while a model is profiled."""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

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


class CommandProgress:
    """What a measuring command shows as it goes, on the terminal: a
    :class:`ComparisonProgress` bar over the variants, and notes in yellow (it implements
    :class:`attnprof.commands.compare.MeasureProgress`)."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def variants(self, names: list[str]) -> ComparisonProgress:
        return ComparisonProgress(self._console, names)

    def note(self, text: str) -> None:
        self._console.print(text, style="yellow", markup=False, highlight=False)


class SweepProgress:
    """A bar over a sweep's points: done/total, the point running and what it is doing,
    and the time left (from the pace of the points so far).

    It implements :class:`attnprof.run.sweep.SweepProgress`; it only displays.
    """

    def __init__(self, total: int, done: int = 0) -> None:
        self._progress = Progress(
            TextColumn("[bold]points"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.description}"), TimeElapsedColumn(), TextColumn("left"),
            TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        self._task = self._progress.add_task("starting", total=total, completed=done)
        self._current = ""

    def point_started(self, index: int, coords: Mapping[str, object]) -> None:
        where = " ".join(f"{k}={v}" for k, v in coords.items()) or "the point"
        self._current = f"#{index} {where}"
        self._progress.update(self._task, description=self._current)

    def phase(self, variant: str, phase: str) -> None:
        text = escape(safe_text(f"{variant} {phase}", limit=120))
        self._progress.update(self._task, description=f"{self._current}: {text}")

    def point_done(self, point: object) -> None:
        self._progress.advance(self._task)

    def __enter__(self) -> SweepProgress:
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
            self._progress.update(self._task, description=escape(safe_text(f"{run}: {what}")))

    def __enter__(self) -> ModelRunProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()


class RankProgress:
    """A bar over the ranks of a distributed run as they are read: read/total.

    No refresh thread (``auto_refresh`` off, redrawn on each rank): the rank readers are
    forked after it starts, and a process that forks should run no other thread.
    """

    def __init__(self, total: int) -> None:
        self._progress = Progress(
            TextColumn("[bold]reading ranks"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=Console(stderr=True), transient=True,
            auto_refresh=False)
        self._task = self._progress.add_task("ranks", total=total)

    def update(self, done: int, total: int, summary: object) -> None:
        self._progress.update(self._task, completed=done, total=total)
        self._progress.refresh()

    def __enter__(self) -> RankProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()
