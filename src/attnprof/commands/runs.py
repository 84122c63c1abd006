"""``attnprof runs``: the runs in the results store, newest first, filtered; or one run
removed (``remove``). Never imports torch."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnprof.store import StoredRun

__all__ = ["RunsListing", "RunsRequest", "run"]


@dataclass(frozen=True, slots=True)
class RunsRequest:
    """Which stored runs ``attnprof runs`` lists; ``None`` leaves a filter off."""

    #: Runs of this record kind (compare, profile, analyze, ...).
    kind: str | None = None
    #: Runs that measured this variant (or implementation).
    variant: str | None = None
    #: Model runs of this model (gpt2, llama, file.py:factory ...).
    model: str | None = None
    #: ``cpu``, ``cuda`` (any cuda:N) or ``cuda:N``.
    device: str | None = None
    #: Runs saved with this label.
    label: str | None = None
    #: Made at or after: ``2026-11-30``, ``2026-11-30T10:00``, or an age (``7d``, ``12h``).
    since: str | None = None
    #: Made before (same forms as ``since``).
    until: str | None = None
    #: At most this many runs (0: all).
    limit: int = 50
    #: The results store (``None``: ``$ATTNPROF_STORE``, else the user's); never created.
    store: str | os.PathLike[str] | None = None
    #: Instead of listing, remove the run this names (run id, unique prefix, or a label
    #: that names one run only).
    remove: str | None = None


@dataclass(frozen=True, slots=True)
class RunsListing:
    """Runs of the store (the one removed, for ``remove``), and the store's name as a
    terminal may show it."""

    runs: list[StoredRun] = field(default_factory=list)
    store: str = ""
    #: Whether ``runs`` is the run just removed.
    removed: bool = False


def run(request: RunsRequest, progress: object | None = None) -> RunsListing:
    """The stored runs ``request`` asks for, newest first; with ``remove``, that run
    removed. A bad limit or time is a :class:`~attnprof.errors.UsageError` before the
    store is opened. ``progress``: this command has none to tell (kept for the one
    signature)."""
    from attnprof.errors import UsageError
    from attnprof.store import RunQuery
    from attnprof.store.when import parse_when

    if request.limit < 0:
        raise UsageError(f"--limit must be 0 (all) or a positive integer, got {request.limit}")
    query = RunQuery(kind=request.kind, variant=request.variant, model=request.model,
                     device=request.device, label=request.label,
                     since=None if request.since is None else parse_when("--since",
                                                                         request.since),
                     until=None if request.until is None else parse_when("--until",
                                                                         request.until),
                     limit=request.limit or None)
    from attnprof.commands.saving import open_to_read

    with open_to_read(request.store) as store:
        if request.remove is not None:
            return RunsListing(runs=[store.remove(request.remove)], store=store.shown,
                               removed=True)
        return RunsListing(runs=store.runs(query), store=store.shown)
