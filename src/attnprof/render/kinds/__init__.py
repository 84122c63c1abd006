"""Each record kind's views, in one module per kind: ``render/kinds/<kind>.py``.

A kind's module holds its :class:`View`: the terminal view, the HTML section, the figures
and the names its figures may take. The generic renderers (the terminal, the HTML page
and the Markdown and notebook views drawn from it, the images) know no kind: they ask
:func:`view_of` for the record's ``kind`` and call its parts. Two parts of a kind's
presentation live on the record itself, because the layers below render read them: its
CSV rows (:meth:`~attnprof.record.base.RecordBase.flat_table`, which ``to_frame`` and the
CSV renderer share) and what ``attnprof runs`` lists of it
(:meth:`~attnprof.record.base.RecordBase.listing`, kept by the store).

:func:`view_of` imports ``render/kinds/<kind>.py`` when a record of that kind is first
shown (the folder is the registry: a kind's view is registered by writing its file):
``attnprof analyze`` loads the analysis's view, not the nine others
(``tests/cli/test_analyze_startup.py``). ``tests/report/test_kinds.py`` holds every kind
of the record family to a view with every part.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from rich.console import Console

    from attnprof.render.figures.base import Figure
    from attnprof.render.html.page import Section

__all__ = ["View", "module_of", "view_of"]


class View(msgspec.Struct, frozen=True):
    """How one record kind is shown. Each part takes the record after
    :func:`~attnprof.render.safe.terminal_safe` (every string escaped for display)."""

    #: The kind's tag, as its records write it in ``kind``.
    kind: str
    #: Prints the whole terminal view: ``terminal(record, console, top)``, ``top`` the
    #: rows each long table shows.
    terminal: Callable[[Any, Console, int], None]
    #: The kind's section of the HTML page: ``section(record, anchor)``; the page adds
    #: what every kind shares (headline, run id, figures: :mod:`attnprof.render.html`).
    section: Callable[[Any, str], Section]
    #: Every figure of the record, in the order the report shows them (at least one).
    figures: Callable[[Any], list[Figure]]
    #: Every name a figure of such a record may take, known before the run (``--plots``
    #: plans its files with them): ``figure_names(variants, traces)``, the names the run
    #: will measure and the traces it will read.
    figure_names: Callable[[Sequence[str], int], list[str]]


def module_of(kind: str) -> str:
    """The module that holds the view of ``kind``: ``attnprof.render.kinds.<kind>``, by
    name, so a kind's view is registered by writing its file."""
    return f"{__name__}.{kind}"


def view_of(kind: str) -> View:
    """The view of the records of ``kind``, its module imported on first use;
    ``TypeError`` naming the file to write for a kind without one."""
    name = module_of(kind)
    try:
        module = importlib.import_module(name) if kind.isidentifier() else None
    except ModuleNotFoundError as e:
        if e.name != name:  # the view exists and an import inside it failed: say that
            raise
        module = None
    if module is None:
        raise TypeError(f"no view of the record kind {kind!r}: write "
                        f"src/attnprof/render/kinds/{kind}.py (its VIEW)")
    view = module.VIEW
    if not isinstance(view, View) or view.kind != kind:
        raise TypeError(f"{name}.VIEW is not the View of {kind!r}")
    return view
