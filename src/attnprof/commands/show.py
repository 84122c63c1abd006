"""``attnprof show RUN``: a stored run (id, unique prefix or label) or a record file, for
rendering as the command that made it rendered it. Never imports torch."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnprof.record.family import Record
    from attnprof.store import StoredRun

__all__ = ["ShowRequest", "Shown", "run"]


@dataclass(frozen=True, slots=True)
class ShowRequest:
    """What ``attnprof show`` was asked."""

    #: A record file (``--json`` output), else a run id, a unique prefix of one, or a
    #: label (the newest run with it).
    target: str
    #: The results store (``None``: ``$ATTNPROF_STORE``, else the user's); never created.
    store: str | os.PathLike[str] | None = None


@dataclass(frozen=True, slots=True)
class Shown:
    """The record found, and the stored run's listing (``None`` for a record file)."""

    record: Record
    run: StoredRun | None = None


def run(request: ShowRequest, progress: object | None = None) -> Shown:
    """The record ``request.target`` names: a record file when one is there, else a run
    of the store. One that names nothing is a :class:`~attnprof.errors.UsageError`.
    ``progress``: this command has none to tell (kept for the one signature)."""
    from attnprof.commands.saving import load_target

    record, stored = load_target(request.target, request.store)
    return Shown(record=record, run=stored)
