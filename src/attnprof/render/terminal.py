"""The terminal: rich tables for people, one view per record kind.

``TerminalRenderer(width=..., color=..., top=...).render(record)`` returns the text (with
ANSI styles when ``color``); :meth:`TerminalRenderer.for_stdout` sizes it for wherever
stdout goes. What a record shows is its kind's view (``render/kinds/<kind>.py``: a
comparison is its table, an analysis one report per trace, ...; see
:mod:`attnprof.render.kinds`), each drawing from the record after
:func:`~attnprof.render.safe.terminal_safe`, so none shows a raw control character.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.console import Console

from attnprof.render.kinds import view_of
from attnprof.render.safe import terminal_safe

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["TerminalRenderer", "make_console", "warm_character_widths"]

#: Width when stdout is not a terminal (a file, a pipe): wide enough for every table.
PIPE_WIDTH = 160


def make_console() -> Console:
    """A stdout console for messages; wide enough for the tables when piped to a file.
    Without rich's emoji codes (here and in :class:`TerminalRenderer`): a name in a trace
    or a path that holds ``:fire:`` is shown as written, and rich's emoji table (1.5 ms
    of start-up) is never loaded."""
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return Console(emoji=False)
    return Console(width=PIPE_WIDTH, emoji=False)


def warm_character_widths() -> None:
    """Load rich's table of character widths now: it loads it (2-3 ms) when it first
    measures a character outside Latin, Greek and box drawing, and every report has some
    (the em dash of its titles, the ``›`` of op paths). For a caller with time to spare
    before it draws (``attnprof analyze`` waiting for its child)."""
    from rich.cells import cell_len

    cell_len("\u2014")


class TerminalRenderer:
    """Tables for a terminal (or a text file)."""

    name: ClassVar[str] = "terminal"
    extension: ClassVar[str] = ".txt"
    output_is_binary: ClassVar[bool] = False

    def __init__(self, *, width: int = PIPE_WIDTH, color: bool = False, top: int = 15) -> None:
        self.width, self.color, self.top = width, color, top

    @classmethod
    def for_stdout(cls, top: int = 15) -> TerminalRenderer:
        """Sized and coloured for this process's stdout."""
        tty = sys.stdout.isatty()
        if tty or "COLUMNS" in os.environ:
            width = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
        else:
            width = PIPE_WIDTH
        return cls(width=width, color=tty, top=top)

    def render(self, record: Record) -> str:
        """The whole terminal view of ``record``; every string of it escaped and cut for a
        terminal first (see :mod:`attnprof.render.safe`)."""
        record = terminal_safe(record)
        return self.draw(lambda console: view_of(record.kind).terminal(record, console,
                                                                       self.top))

    def draw(self, draw: Callable[[Console], None]) -> str:
        """What ``draw`` prints on a console of this renderer's width and colours, as text.
        For a view drawn in parts (:class:`~attnprof.render.kinds.analyze.TwoPartDrawing`);
        what it draws must come from :func:`~attnprof.render.safe.terminal_safe`."""
        buffer = io.StringIO()
        console = Console(file=buffer, width=self.width, force_terminal=self.color,
                          color_system="auto" if self.color else None, highlight=self.color,
                          emoji=False)
        draw(console)
        return buffer.getvalue()
