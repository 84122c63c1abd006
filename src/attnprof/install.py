"""The command that installs an optional extra, as the user's installation needs it.

An error that says what to install (``--html`` without vl-convert-python, ``model gpt2``
without transformers) names one command, made here: ``pip install 'attnprof[EXTRA]'`` for an
installed package, and the clone's own command, ``pip install -c constraints.txt -e
'.[EXTRA]'``, when attnprof runs from a source checkout (an editable install or
``PYTHONPATH=src``): there a registry install would put a second attnprof beside the clone
and leave torch unpinned (``constraints.txt`` pins the CPU build).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["install_command", "source_checkout"]


def source_checkout() -> Path | None:
    """The checkout attnprof runs from (``src/attnprof`` two levels below a folder with
    ``pyproject.toml`` and ``constraints.txt``), or None for an installed package."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "constraints.txt").is_file():
        return root
    return None


def install_command(extra: str) -> str:
    """How to install the optional extra ``extra`` (``"hf"``, ``"report"``, ...) here."""
    root = source_checkout()
    if root is None:
        return f"pip install 'attnprof[{extra}]'"
    return f"pip install -c constraints.txt -e '.[{extra}]' (in the checkout {root})"
