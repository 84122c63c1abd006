"""Errors that say what to install name the command that fits this installation: the clone's
``pip install -c constraints.txt -e '.[EXTRA]'`` from a source checkout, the registry's
``pip install 'attnprof[EXTRA]'`` for an installed package (attnprof.install)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import attnprof.install
from attnprof.install import install_command

SRC = Path(attnprof.install.__file__).resolve().parents[1]
REPO = SRC.parent


def _load_from(folder: Path) -> ModuleType:
    """attnprof/install.py loaded from a copy under ``folder/src`` (its own path decides)."""
    target = folder / "src" / "attnprof" / "install.py"
    target.parent.mkdir(parents=True)
    shutil.copy(attnprof.install.__file__, target)
    spec = importlib.util.spec_from_file_location("install_copy", target)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_from_this_checkout_the_clones_command() -> None:
    assert (REPO / "constraints.txt").is_file()
    command = install_command("hf")
    assert command.startswith("pip install -c constraints.txt -e '.[hf]'")
    assert str(REPO) in command


def test_an_installed_package_gets_the_registry_command(tmp_path: Path) -> None:
    installed = _load_from(tmp_path / "site-packages")
    assert installed.source_checkout() is None
    assert installed.install_command("report") == "pip install 'attnprof[report]'"


def test_a_checkout_elsewhere_names_that_checkout(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    (clone / "constraints.txt").write_text("torch==2.13.0\n", encoding="utf-8")
    module = _load_from(clone)
    assert module.install_command("ray") == (
        f"pip install -c constraints.txt -e '.[ray]' (in the checkout {clone.resolve()})")


def test_every_install_suggestion_is_made_by_install_command() -> None:
    """No message spells out an extra's install itself (docstrings may)."""
    spelled = []
    for path in sorted((SRC / "attnprof").rglob("*.py")):
        if path.name == "install.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in docstrings and "attnprof[" in node.value):
                spelled.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert spelled == []
