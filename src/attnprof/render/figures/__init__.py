"""Figures: every record kind drawn as Vega-Lite specifications, one module per family.

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

from collections.abc import Callable, Sequence
from typing import Any

from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord, ProfileRecord
from attnprof.record.diff import DiffRecord
from attnprof.record.family import Record
from attnprof.record.limits import LimitsRecord
from attnprof.record.model import ModelRecord
from attnprof.record.ranks import RanksRecord
from attnprof.record.sweep import SweepRecord
from attnprof.render.figures.base import Figure, file_stem
from attnprof.render.safe import terminal_safe

__all__ = ["Figure", "figure_names", "figures_of"]


def figures_of(record: Record) -> list[Figure]:
    """Every figure of ``record``, in the order the report shows them (at least one per
    kind, so every renderer of images has something to draw)."""
    record = terminal_safe(record)
    for kind in type(record).__mro__:
        if kind in _BUILDERS:
            return _unique(_BUILDERS[kind](record))
    raise TypeError(f"no figures of {type(record).__name__}")


def figure_names(kind: str, *, variants: Sequence[str] = (), traces: int = 0) -> list[str]:
    """Every name a figure of a ``kind`` record may take, known before the run: what
    ``--plots`` will write is checked before any work (:mod:`attnprof.outputs`), and which
    figures a record has depends on its results (a roofline only with ceilings, a timeline
    only when the trace has a step, ranks or single traces by the traces' content), so
    this is the superset, in the builders' names (``tests/report`` holds them to it).

    ``variants``: the names a comparison will measure (``compare``, ``profile``);
    ``traces``: how many traces ``analyze`` reads."""
    trace = ("categories", "timeline")
    names: list[str] = {
        "compare": ["latency", "memory", "roofline"],
        "profile": ["latency", "memory", "roofline"],
        "analyze": ["ranks-categories", "ranks-collectives",
                    *(f"trace{i + 1}-{part}" for i in range(traces) for part in trace)],
        "ranks": ["ranks-categories", "ranks-collectives"],
        "check": ["check", *(f"check-{part}" for part in trace)],
        "sweep": ["scaling-latency", "scaling-memory", "points-latency"],
        "recommend": ["scaling-latency", "scaling-memory", "points-latency"],
        "model": ["attention-share", "model-latency"],
        "limits": ["limits"],
        "diff": ["diff"],
    }[kind]
    if kind in ("compare", "profile"):
        names += [f"{file_stem(v)}-{part}" for v in variants for part in trace]
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


def _compare(record: CompareRecord) -> list[Figure]:
    from attnprof.render.figures.compare import compare_figures
    from attnprof.render.figures.trace import trace_figures

    figures = compare_figures(record)
    for row in record.results:
        if row.analysis is not None:
            figures += trace_figures(row.analysis, prefix=row.variant)
    return figures


def _analyze(record: AnalyzeRecord) -> list[Figure]:
    from attnprof.render.figures.trace import trace_figures

    figures = []
    for i, report in enumerate(record.reports):
        figures += trace_figures(report, prefix=f"trace{i + 1}")
    return figures


def _check(record: CheckRecord) -> list[Figure]:
    from attnprof.render.figures.trace import check_figure, trace_figures

    report = record.report
    return trace_figures(report, prefix="check") if report is not None else [
        check_figure(record)]


def _sweep(record: SweepRecord) -> list[Figure]:
    from attnprof.render.figures.sweep import sweep_figures

    return sweep_figures(record)


def _model(record: ModelRecord) -> list[Figure]:
    from attnprof.render.figures.model import model_figures

    return model_figures(record)


def _limits(record: LimitsRecord) -> list[Figure]:
    from attnprof.render.figures.limits import limits_figures

    return limits_figures(record)


def _ranks(record: RanksRecord) -> list[Figure]:
    from attnprof.render.figures.family import ranks_figures

    return ranks_figures(record)


def _diff(record: DiffRecord) -> list[Figure]:
    from attnprof.render.figures.family import diff_figures

    return diff_figures(record)


_BUILDERS: dict[type, Callable[[Any], list[Figure]]] = {
    ProfileRecord: _compare,
    CompareRecord: _compare,
    AnalyzeRecord: _analyze,
    CheckRecord: _check,
    SweepRecord: _sweep,
    ModelRecord: _model,
    LimitsRecord: _limits,
    RanksRecord: _ranks,
    DiffRecord: _diff,
}
