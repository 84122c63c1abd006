"""No page names a module, file or class that does not exist.

Checked in the README and every page of the manual:

* dotted names under ``attnprof`` (``attnprof.run.compare.compare``, in prose or code),
  imported and looked up for real;
* a code span ``a.b`` whose head is a module of attnprof (``formatting.safe_text``) names
  something in it; one whose head is neither attnprof's, nor an importable module, nor a
  field or alias listed below, names nothing (the README once named ``runner.compare``);
* backticked files and folders (``models/structure.py``, ``examples/attention/``), found
  in the repository;
* backticked class-like names (``CompareRecord``, ``TraceMeta.id_labels``), defined in
  ``src/attnprof`` (with the attribute), or listed below as another library's or a kernel
  name's.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from markdown_docs import REPO, Page, inline_code, pages

PAGES = pages()
SRC = REPO / "src"
PACKAGE = SRC / "attnprof"

# Outside names the pages may show in backticks, by where they come from.
OUTSIDE_CLASSES = {
    # transformers and torch
    "AutoModel", "EncDecAttention", "SelfOutput", "Cache", "DynamicCache", "ProfilerStep",
    "GPT2Config", "LlamaConfig", "SDPBackend", "MultiheadAttention", "FlopCounterMode",
    # torch autograd nodes, as trace events name them (traces.md: the attention time)
    "BmmBackward0", "SafeSoftmaxBackward0",
    # rich
    "Text",
    # parts of GPU kernel names, trace event names and fields (kernel-names.md, trace-table.md)
    "Addr", "CatArrayBatchedCopy", "DefaultGemmType", "FlashAttentionForwardSm100",
    "FlashAttnBwdSm90", "FlashAttnFwdSm90", "HtoD", "ISA90a", "Sm90", "Bytes",
}
# Another library's attribute whose class name attnprof also uses (HTA's TraceDiff).
OUTSIDE_ATTRIBUTES = {"TraceDiff.ops_diff"}
# Heads of dotted code spans that are not modules: fields of a trace event or a record, and
# the usual import aliases.
OUTSIDE_HEADS = {"args", "settings", "np", "F", "nn", "polars", "triton", "record"}
# Example names a page uses for the user's own files, and other projects' files it cites
# (Holistic Trace Analysis's modules, in the measured figures).
PLACEHOLDER_FILES = {"file.py", "path/to/file.py", "my_attn.py", "my_model.py", "dir/",
                     "breakdown_analysis.py", "communication_analysis.py"}
# Data files a page names (traces, records, plots): the user's, or the shared traces'.
_DATA = (".json", ".gz", ".svg", ".png", ".csv", ".html", ".tmp", ".db")
_FILE = re.compile(r"[\w./-]+\.(?:py|c|sh|toml|md|yml|txt)")
_FOLDER = re.compile(r"[\w.-]+(?:/[\w.-]+)+/")
_DOTTED = re.compile(r"\battnprof(?:\.[A-Za-z_]\w*)+(?![\w:])")
_CLASSY = re.compile(r"[A-Z]\w*[a-z]\w*(?:\.[A-Za-z_]\w*)?")


def _resolve(dotted: str) -> str | None:
    """``None`` when ``dotted`` (``attnprof.a.b``) exists; else what is missing."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            found: object = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for index, attr in enumerate(parts[cut:], cut):
            if not _has(found, attr):
                return f"{'.'.join(parts[:index])} has no {attr!r}"
            found = getattr(found, attr, None)
        return None
    return f"no module {parts[0]!r}"


def _has(owner: object, attr: str) -> bool:
    if hasattr(owner, attr):
        return True
    # A field without a default (a dataclass's) is an annotation, not a class attribute.
    return any(attr in getattr(klass, "__annotations__", {})
               for klass in getattr(owner, "__mro__", ()))


@cache
def _modules() -> dict[str, list[str]]:
    """attnprof's modules by their last name (``regions`` -> the modules so named)."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.setdefault(parts[-1], []).append(".".join(parts))
    return found


@cache
def _classes() -> dict[str, str]:
    """Every class and top-level name defined in ``src/attnprof`` -> its module."""
    found = {}
    for name, modules in _modules().items():
        del name
        for module in modules:
            path = SRC / Path(*module.split("."))
            path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    found[node.name] = module
                elif isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found[target.id] = module
    return found


@cache
def _repo_files() -> set[str]:
    skip = {".venv", ".git", "site", "build", "__pycache__"}
    return {p.name for p in REPO.rglob("*") if not skip.intersection(p.parts[len(REPO.parts):])}


def _file_exists(name: str, page: Page) -> bool:
    name = name.split(":")[0].rstrip("/") or name
    if "/" not in name:
        return name in _repo_files()
    bases = (REPO, PACKAGE, SRC, page.path.parent, REPO / "tests")
    return any((base / name).exists() for base in bases)


def _problems(page: Page) -> Iterator[str]:
    for line_no, line in [*page.prose, *((b.line, b.text) for b in page.blocks)]:
        for match in _DOTTED.finditer(line):
            missing = _resolve(match.group(0))
            if missing:
                yield f"{page.name}:{line_no}: `{match.group(0)}`: {missing}"
    for line_no, code in inline_code(page):
        where = f"{page.name}:{line_no}: `{code}`"
        if code.split(":")[0] in PLACEHOLDER_FILES or code.startswith(("/", "~", "$")) \
                or " " in code or code.endswith(_DATA):
            continue
        file = _FILE.fullmatch(code.split(":")[0])
        if file or _FOLDER.fullmatch(code):
            if not _file_exists(code, page):
                yield f"{where}: no such file or folder in the repository"
            continue
        if re.fullmatch(r"[a-z_]\w*(?:\.[a-z_]\w*)+", code) and not code.startswith("attnprof."):
            head, rest = code.split(".", 1)
            if head in OUTSIDE_HEADS:
                continue
            if head in _modules():
                if not any(_resolve(f"{module}.{rest}") is None for module in _modules()[head]):
                    yield f"{where}: no {rest!r} in attnprof's {head!r}"
            elif importlib.util.find_spec(head) is None:
                yield f"{where}: {head!r} is neither a module of attnprof nor one installed"
            continue
        if _CLASSY.fullmatch(code) and not re.match(r"[A-Z]+_", code):  # not NAME_us
            name, _, attr = code.partition(".")
            # Python's own names (None, SystemExit, RecursionError) are nobody's to define.
            if name in OUTSIDE_CLASSES or code in OUTSIDE_ATTRIBUTES or hasattr(builtins, name):
                continue
            module = _classes().get(name)
            if module is None:
                yield f"{where}: no class or name {name!r} is defined in src/attnprof"
            elif attr and _resolve(f"{module}.{name}.{attr}") is not None:
                yield f"{where}: {name} ({module}) has no {attr!r}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_names_exist(page: Page) -> None:
    assert list(_problems(page)) == []


def test_the_checker_catches_what_does_not_exist() -> None:
    page = Page(path=PAGES[0].path, text="")
    page.prose = [(1, "`runner.compare` collects into a `RunRecord` "
                      "(`attnprof.runner.compare`, `formatting.no_such_thing`, "
                      "`models/no_such.py`, `NoSuchRecord`, `CompareRecord.no_field`); "
                      "fine: `attnprof.run.compare.compare`, `formatting.safe_text`, "
                      "`models/structure.py`, `CompareRecord.results`, `torch.compile`")]
    found = list(_problems(page))
    assert len(found) == 6, found
    assert "no module" not in found[0] and "attnprof.runner" in found[0]
    assert "'runner' is neither a module of attnprof nor one installed" in found[1]
    assert "no 'no_such_thing' in attnprof's 'formatting'" in found[2]
    assert "models/no_such.py" in found[3]
    assert "'NoSuchRecord'" in found[4]
    assert "has no 'no_field'" in found[5]
