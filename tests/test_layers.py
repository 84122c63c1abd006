"""The import graph of ``src/attnprof`` follows the layer order written in
:mod:`attnprof.layers`: no module imports from a unit above its own, and no module imports
itself back through others (no cycle, inside a package either).

Every import counts, wherever it is written: at module level, inside a function (a "lazy"
import) and under ``if TYPE_CHECKING``. A lazy import only postpones a cycle's half-built
module from import time to the first call, and a type-checking one is still one module
naming the other's classes: either way the two modules can no longer be read, tested or
moved one without the other, which is what the layer order exists to prevent, so the same
standard holds inside a unit as between units."""

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
    """Every attnprof name ``path`` imports (anywhere in the file), with its line:
    ``attnprof.a.b`` for ``import attnprof.a.b``, ``attnprof.a.X`` for ``from attnprof.a
    import X`` (``X`` a submodule, a class or a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: use absolute imports"
            if node.module:
                found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "attnprof"]


MODULES = sorted(PACKAGE.rglob("*.py"))
NAMES = {_module_name(p) for p in MODULES}


def _is_module(name: str) -> bool:
    """Whether ``attnprof.x.y`` is a module: a file, a package, or a C extension (built
    from ``y.c``)."""
    where = SRC.joinpath(*name.split("."))
    return (where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()
            or where.with_suffix(".c").is_file())


def _target(name: str) -> str:
    """The module an imported name lives in: ``attnprof.a.b.X`` is ``attnprof.a.b`` when
    ``X`` is a class or function, itself when it is a submodule."""
    while not _is_module(name):
        name = name.rsplit(".", 1)[0]
    return name


def import_graph() -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports (a C
    extension, which imports nothing of ours, left out)."""
    return {_module_name(path): {t for _, name in _imports(path)
                                 if (t := _target(name)) in NAMES} - {_module_name(path)}
            for path in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of two modules or more, each sorted
    (Tarjan's algorithm, iterative: no recursion limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


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


def test_no_import_cycles() -> None:
    graph = import_graph()
    circles = cycles(graph)
    detail = ["; ".join(f"{m} -> {sorted(graph[m] & set(c))}" for m in c) for c in circles]
    assert not circles, f"{len(circles)} import cycle(s): {detail}"


def test_the_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"c"}}) == []
    # Submodules and the names they define are told apart, C extension included.
    assert _target("attnprof.trace.scan.F_TS_INT") == "attnprof.trace.scan"
    assert _target("attnprof.trace._scan") == "attnprof.trace._scan"
    assert _target("attnprof.trace.Trace") == "attnprof.trace"
    # Lazy and type-checking imports are edges like any other.
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\n"
                      "if TYPE_CHECKING:\n    from attnprof.record.base import RecordBase\n"
                      "def f():\n    import attnprof.record.family\n", encoding="utf-8")
    assert [n for _, n in _imports(module)] == ["attnprof.record.base.RecordBase",
                                                "attnprof.record.family"]
