"""docs/design.md's layer order is the one ``layers.py`` holds (issue 32: it had drifted).

The page's block between ``<!-- layers:begin -->`` and ``<!-- layers:end -->`` must be
exactly what ``scripts/layer_order.py`` generates from ``src/attnprof/layers.py``; after
changing the order, ``python scripts/layer_order.py --write`` puts the new block in.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from attnprof.layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layer_order", ROOT / "scripts/layer_order.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_design_md_holds_the_generated_layer_order() -> None:
    gen = _generator()
    page = (ROOT / "docs/design.md").read_text(encoding="utf-8")
    block = gen.layer_block((ROOT / "src/attnprof/layers.py").read_text(encoding="utf-8"))
    start, end = page.index(gen.BEGIN), page.index(gen.END) + len(gen.END)
    assert page[start:end] == block, (
        "docs/design.md's layer order differs from layers.py: run "
        "`python scripts/layer_order.py --write`")


def test_the_block_names_every_unit_once_in_order() -> None:
    groups = _generator().layer_groups((ROOT / "src/attnprof/layers.py").read_text())
    assert [u for _, units in groups for u in units] == list(LAYERS)
    assert all(comment for comment, _ in groups)  # every group says what it is


def test_a_changed_order_changes_the_block() -> None:
    gen = _generator()
    source = (ROOT / "src/attnprof/layers.py").read_text()
    swapped = source.replace('"record", "store",', '"store", "record",')
    assert swapped != source
    assert gen.layer_block(swapped) != gen.layer_block(source)
