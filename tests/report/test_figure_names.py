"""The figures ``--plots`` writes are the ones the outputs plan named before the run
(issue 30, items 2, 3 and 7): :func:`~attnprof.render.figures.figure_names` is a superset
of every record kind's figures, on real records of every kind."""

from __future__ import annotations

from typing import Any

import pytest

from attnprof.render.figures import figure_names, figures_of

KINDS = ("compare", "compare-statuses", "profile", "analyze", "sweep", "model", "check",
         "limits", "recommend", "ranks", "diff", "diff-trace")


def planned(record: Any) -> list[str]:
    """What the command that made ``record`` plans before it runs."""
    kind = record.kind
    if kind in ("compare", "profile"):
        return figure_names(kind, variants=[r.variant for r in record.results])
    if kind == "analyze":
        return figure_names(kind, traces=len(record.reports))
    if kind == "ranks":  # analyze's other record: planned by analyze, whatever it finds
        return figure_names("analyze", traces=len(record.ranks))
    return figure_names(kind)


@pytest.mark.parametrize("kind", KINDS)
def test_every_figure_is_planned(kind: str, records_by_kind: dict[str, Any]) -> None:
    record = records_by_kind[kind]
    made = [figure.name for figure in figures_of(record)]
    assert made, kind
    assert set(made) <= set(planned(record)), (made, planned(record))


def test_names_a_file_name_cannot_tell_apart_are_all_planned() -> None:
    # "a.b" and "a b" both become "a-b": the second variant's figures are "-2"; either may
    # have no trace (a failed row), so each may take either name.
    names = figure_names("compare", variants=["a.b", "a b", "sdpa"])
    assert {"a-b-categories", "a-b-categories-2", "a-b-timeline", "a-b-timeline-2",
            "sdpa-categories", "latency", "roofline"} <= set(names)
    assert len(names) == len(set(names))
