"""Figures: every record kind drawn as Vega-Lite specifications, one module per family;
which a record has is its kind's view's to say (:mod:`attnprof.render.kinds`).

A :class:`Figure` is a name, a title and a Vega-Lite spec (plain data: the values are in
it). The HTML report embeds the specs and Vega draws them in the page; the image renderers
(:mod:`attnprof.render.images`) turn the same specs into PNG and SVG without a browser —
one plotting path for every output. Builders draw what the record holds and fit nothing;
where a chart needs a line (a roofline, a fitted power law), it is drawn by Vega from the
recorded numbers. Every string a spec carries comes from the record after
:func:`~attnprof.render.safe.terminal_safe`: control characters are shown as escapes
(an ESC byte would otherwise end the SVG renderer), and Vega draws data as text, never
as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attnprof.render.figures.base import Figure
from attnprof.render.kinds import view_of
from attnprof.render.safe import terminal_safe

if TYPE_CHECKING:
    from attnprof.record.family import Record

__all__ = ["Figure", "figure_names", "figures_of"]


def figures_of(record: Record) -> list[Figure]:
    """Every figure of ``record``, in the order the report shows them (at least one per
    kind, so every renderer of images has something to draw)."""
    record = terminal_safe(record)
    return _unique(view_of(record.kind).figures(record))


def figure_names(kind: str, *, variants: Sequence[str] = (), traces: int = 0) -> list[str]:
    """Every name a figure of a ``kind`` record may take, known before the run: what
    ``--plots`` will write is checked before any work (:mod:`attnprof.outputs`), and which
    figures a record has depends on its results (a roofline only with ceilings, a timeline
    only when the trace has a step, ranks or single traces by the traces' content), so
    this is the superset, in the builders' names (``tests/report`` holds them to it).

    ``variants``: the names a comparison will measure (``compare``, ``profile``);
    ``traces``: how many traces ``analyze`` reads."""
    names = view_of(kind).figure_names(variants, traces)
    # _unique's suffixes: with any of a name's figures left out, the others may take any
    # of the suffixes up to their count.
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return [*counts, *(f"{name}-{n}" for name, count in counts.items()
                       for n in range(2, count + 1))]


def _unique(figures: list[Figure]) -> list[Figure]:
    """Names made unique (two variants whose names differ only in characters a file name
    cannot hold would share one): the later ones get ``-2``, ``-3``, ..."""
    seen: dict[str, int] = {}
    out = []
    for figure in figures:
        n = seen[figure.name] = seen.get(figure.name, 0) + 1
        out.append(figure if n == 1 else Figure(f"{figure.name}-{n}", figure.title,
                                                figure.spec))
    return out
