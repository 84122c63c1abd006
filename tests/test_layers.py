"""The import graph of ``src/attnprof`` follows the layer order written in
:mod:`attnprof.layers`: no module imports from a unit above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnprof.layers import LAYERS, unit_of

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "attnprof"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every attnprof module ``path`` imports (anywhere in the file), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: use absolute imports"
            if node.module == "attnprof":  # from attnprof import x: x may be a submodule
                found += [(node.lineno, f"attnprof.{a.name}") for a in node.names]
            elif node.module:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "attnprof"]


MODULES = sorted(PACKAGE.rglob("*.py"))


def _rank(module: str) -> int:
    return LAYERS.index(unit_of(module))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_layer_above_it(path: Path) -> None:
    module = _module_name(path)
    here = _rank(module)
    upward = [f"line {line}: {target} ({unit_of(target)})"
              for line, target in _imports(path) if _rank(target) > here]
    assert not upward, f"{module} (layer {unit_of(module)}) imports from above: {upward}"


def test_every_module_belongs_to_a_layer() -> None:
    for path in MODULES:
        unit_of(_module_name(path))  # raises for a module outside every unit


def test_the_check_sees_a_violation() -> None:
    # The rule itself: the record may not import the analysis that reads it.
    assert _rank("attnprof.analysis.analyze") > _rank("attnprof.record.compare")
    assert _rank("attnprof.analysis.index.op_index") < _rank("attnprof.analysis.passes")
    assert _rank("attnprof") == len(LAYERS) - 1
