"""What a figure is, and the pieces of Vega-Lite every builder shares."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["SCHEMA", "TRACE_FIGURES", "Figure", "chart", "color_scale", "file_stem"]

#: The Vega-Lite version the specs are written for (vl-convert's default, and the runtime
#: the HTML report inlines).
SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
#: The figures of one trace, each named ``PREFIX-PART`` (:mod:`.trace`): its time per
#: category, and its step timeline when it has one.
TRACE_FIGURES = ("categories", "timeline")
#: More variants than the 10-colour scheme holds get the 20-colour one.
_WIDE_SCHEME = 10


@dataclass(frozen=True)
class Figure:
    """One chart: ``name`` is its file stem under ``--plots`` (unique in a record),
    ``title`` what the report heads it with, ``spec`` the Vega-Lite specification (without
    ``$schema``, so figures can be stacked)."""

    name: str
    title: str
    spec: dict[str, Any]

    def standalone(self) -> dict[str, Any]:
        """The spec as a file of its own (with ``$schema`` and a white background)."""
        return {"$schema": SCHEMA, "background": "white", **self.spec}


def chart(title: str, values: list[dict[str, Any]], *, width: int = 560, height: int = 300,
          subtitle: str | list[str] | None = None, **spec: Any) -> dict[str, Any]:
    """A single-view spec with inline ``values``."""
    heading: dict[str, Any] = {"text": title, "anchor": "start"}
    if subtitle:
        heading["subtitle"] = subtitle
    return {"title": heading, "width": width, "height": height,
            "data": {"values": values}, **spec}


def color_scale(n: int) -> dict[str, Any]:
    """A categorical colour scale with room for ``n`` names."""
    return {"scheme": "category20" if n > _WIDE_SCHEME else "tableau10"}


def file_stem(text: str) -> str:
    """``text`` as a file name part: letters, digits, ``-`` and ``_`` only."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")
    return stem[:60] or "figure"
