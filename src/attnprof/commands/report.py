"""``attnprof report RECORD.json [RECORD.json ...] -o PATH``: one self-contained HTML page
of saved records, one section each (and, with ``plots``, their figures as PNG and SVG).

Imports no torch. Every record is read before anything is written (:func:`load`), so a
file that is not a record fails the command with no output; then the page and the figures
are written (:func:`write`). The command line plans and checks every file it will write
between the two (:mod:`attnprof.cli.planning`); :func:`run` is both, for a program.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["ReportRequest", "figure_names", "load", "plot_folders", "run", "write"]


@dataclass(frozen=True, slots=True)
class ReportRequest:
    """What ``attnprof report`` was asked."""

    #: Record files written with ``--json`` (any kind), one section each, in this order.
    records: tuple[str, ...]
    #: The HTML file to write.
    output: str | os.PathLike[str]
    #: A folder to also write each record's figures into (one sub-folder per record when
    #: there are several); ``None``: none.
    plots: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        """A program's mistakes in the fields, one line each (:mod:`.fields`)."""
        from attnprof.commands.fields import set_names

        set_names(self, "records")


def run(request: ReportRequest, progress: object | None = None) -> list[Record]:
    """Write the HTML report of ``request.records`` (and their figures, when
    ``request.plots``); the records, as read. A file that is not a record is a
    :class:`~attnprof.errors.UsageError`, raised before anything is written. ``progress``:
    this command has none to tell (kept for the one signature)."""
    records = load(request)
    write(request, records)
    return records


def load(request: ReportRequest) -> list[Record]:
    """The records of ``request``, each read and checked: the part that can fail on the
    user's input, done before anything is written."""
    from attnprof.record.family import load_record

    return [load_record(path) for path in request.records]


def plot_folders(request: ReportRequest, records: list[Record]) -> list[Path]:
    """Where each record's figures go: ``plots`` itself for one record, a sub-folder
    ``N-KIND`` of it for each of several; none without ``plots``."""
    if request.plots is None:
        return []
    if len(records) == 1:
        return [Path(request.plots)]
    return [Path(request.plots) / f"{i + 1}-{record.kind}" for i, record in enumerate(records)]


def figure_names(record: Record) -> list[str]:
    """The names of ``record``'s figures (each written as ``NAME.png`` and ``NAME.svg``)."""
    from attnprof.render.figures import figures_of

    return [figure.name for figure in figures_of(record)]


def write(request: ReportRequest, records: list[Record]) -> None:
    """Write the page (atomically) and the figures of ``records``, read by :func:`load`."""
    from attnprof.atomic import write_atomic
    from attnprof.render.html import render_html

    write_atomic(request.output, render_html(records).encode())
    if request.plots is not None:
        from attnprof.render.images import write_plots

        for folder, record in zip(plot_folders(request, records), records, strict=True):
            write_plots(record, folder)
