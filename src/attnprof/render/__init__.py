"""Renderers: each takes a record and writes one format; they never compute a metric.

:data:`RENDERERS` is the flat registry (name -> class); every renderer takes every record
kind, and ``tests/test_renderers.py`` runs each over each. A renderer says whether it
writes text or bytes (``output_is_binary``). The HTML and image renderers need the
``report`` extra; they import it when they render.
"""

from __future__ import annotations

from attnprof.render.base import Renderer, write_rendered
from attnprof.render.csv_table import CsvRenderer
from attnprof.render.html import HtmlRenderer
from attnprof.render.images import PngRenderer, SvgRenderer
from attnprof.render.json_record import JsonRenderer
from attnprof.render.markdown import MarkdownRenderer
from attnprof.render.terminal import TerminalRenderer

__all__ = ["RENDERERS", "CsvRenderer", "HtmlRenderer", "JsonRenderer", "MarkdownRenderer",
           "PngRenderer", "Renderer", "SvgRenderer", "TerminalRenderer", "write_rendered"]

#: Every renderer by name, in the order ``--help`` lists them.
RENDERERS: dict[str, type[Renderer]] = {
    r.name: r for r in (TerminalRenderer, JsonRenderer, CsvRenderer, MarkdownRenderer,
                        HtmlRenderer, SvgRenderer, PngRenderer)
}
