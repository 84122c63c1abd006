"""Renderers: each takes a record and writes one format; they never compute a metric.

:data:`RENDERERS` is the flat registry (name -> class); every renderer takes every record
kind, and ``tests/test_renderers.py`` runs each over each. A renderer says whether it
writes text or bytes (``output_is_binary``). The HTML and image renderers need the
``report`` extra; they import it when they render.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from attnprof.render.base import Renderer, write_rendered

if TYPE_CHECKING:
    from attnprof.render.csv_table import CsvRenderer
    from attnprof.render.html import HtmlRenderer
    from attnprof.render.images import PngRenderer, SvgRenderer
    from attnprof.render.json_record import JsonRenderer
    from attnprof.render.markdown import MarkdownRenderer
    from attnprof.render.terminal import TerminalRenderer

__all__ = ["RENDERERS", "CsvRenderer", "HtmlRenderer", "JsonRenderer", "MarkdownRenderer",
           "PngRenderer", "Renderer", "SvgRenderer", "TerminalRenderer", "write_rendered"]

#: Where each renderer lives, in the order ``--help`` lists them. Each is imported on first
#: use: a command draws one or two formats, and the others' modules (the HTML page, the
#: figures, every record kind's CSV columns) are start-up it would not use.
_MODULES = {"TerminalRenderer": "terminal", "JsonRenderer": "json_record",
            "CsvRenderer": "csv_table", "MarkdownRenderer": "markdown",
            "HtmlRenderer": "html", "SvgRenderer": "images", "PngRenderer": "images"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"attnprof.render.{_MODULES[name]}"), name)
    if name == "RENDERERS":  # every renderer by name
        renderers: dict[str, type[Renderer]] = {
            r.name: r for r in (__getattr__(n) for n in _MODULES)}
        return renderers
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
