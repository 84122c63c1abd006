"""The flags several commands share, read from argparse's namespace once, into a typed,
frozen value: the helpers that turn them into library calls take this, never the namespace.

Commands differ in which of these flags they have (``sweep`` has ``--plot`` and
``--resume``, ``compare`` has ``--executor``, ``runs`` has no ``--label``), so a flag a
command lacks reads as its default here, in this one place, instead of an attribute lookup
with a fallback at every use.
"""

from __future__ import annotations

import argparse
from typing import Any

import msgspec

__all__ = ["SharedFlags", "given_flags"]

_PATHS = ("json", "csv", "plot", "html", "markdown", "plots", "budgets", "resume")


class SharedFlags(msgspec.Struct, frozen=True):
    """Outputs, inputs, store and executor flags, as the command line gave them."""

    json: str | None = None
    csv: str | None = None
    plot: str | None = None
    html: str | None = None
    markdown: str | None = None
    plots: str | None = None
    budgets: str | None = None
    resume: str | None = None
    variants: tuple[str, ...] = ()
    label: str | None = None
    store: str | None = None
    no_store: bool = False
    executor: str = "inline"

    @classmethod
    def of(cls, args: argparse.Namespace) -> SharedFlags:
        """The shared flags of a parsed command line (the ones it lacks at their defaults)."""
        given = given_flags(args, tuple(f.name for f in msgspec.structs.fields(cls)))
        for name in _PATHS:  # `runs --json` is a switch (JSON on stdout), not a file
            if not isinstance(given.get(name, ""), str):
                del given[name]
        if "variants" in given:
            given["variants"] = tuple(given["variants"])
        return cls(**given)

    @property
    def record_path(self) -> str | None:
        """Where a grid command saves its record: ``--json``, else the file it resumes."""
        return self.json or self.resume


def given_flags(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    """The flags among ``names`` this command has and the user (or its default) set."""
    values = vars(args)
    return {n: values[n] for n in names if values.get(n) is not None}
