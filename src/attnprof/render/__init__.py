"""Renderers: each takes a record and writes one format; they never compute a metric.

:data:`RENDERERS` is the flat registry (name -> class); every renderer takes every record
kind, and ``tests/test_renderers.py`` runs each over each.
"""

from __future__ import annotations

from attnprof.render.base import Renderer, write_rendered
from attnprof.render.csv_table import CsvRenderer
from attnprof.render.json_record import JsonRenderer
from attnprof.render.terminal import TerminalRenderer

__all__ = ["RENDERERS", "CsvRenderer", "JsonRenderer", "Renderer", "TerminalRenderer",
           "write_rendered"]

#: Every renderer by name, in the order ``--help`` lists them.
RENDERERS: dict[str, type[Renderer]] = {
    r.name: r for r in (TerminalRenderer, JsonRenderer, CsvRenderer)
}
