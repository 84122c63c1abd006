"""``attnprof env``: this machine's environment and measured ceilings per dtype, cached in
the results store with the date. A comparison on the same host and device reuses the
cached ceilings instead of spending a second measuring them. Without ``refresh`` and with
a cache, torch is not imported: the cached profiles are read and returned.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from attnprof.record.machine import MachineProfile

__all__ = ["DEFAULT_DTYPES", "EnvProgress", "EnvRequest", "run"]

#: The dtypes measured by default: what attention runs in.
DEFAULT_DTYPES = ("float32", "bfloat16", "float16")


class EnvProgress(Protocol):
    """What :func:`run` tells as it goes (the CLI prints it on stderr; the API is quiet)."""

    def note(self, text: str) -> None:
        """That the ceilings are being measured now (a few seconds), and on what."""


@dataclass(frozen=True, slots=True)
class EnvRequest:
    """What ``attnprof env`` was asked."""

    #: Measure again even when the store has this host's profile, and cache the result.
    refresh: bool = False
    #: ``cpu``, ``cuda`` or ``cuda:N``; ``None``: every device cached for this host, or
    #: (measuring) cuda when present, else the CPU.
    device: str | None = None
    #: The dtypes to measure (``None``: :data:`DEFAULT_DTYPES`).
    dtypes: Sequence[str] | None = None
    #: The intra-op threads to measure on: a count or ``"all"`` (``None``: as compare
    #: measures, 1 on a CPU). A comparison reuses ceilings of its own thread count only.
    threads: str | None = None
    #: The results store (``None``: ``$ATTNPROF_STORE``, else the user's store); made only
    #: to save a measured profile into.
    store: str | os.PathLike[str] | None = None


def run(request: EnvRequest, progress: EnvProgress | None = None) -> list[MachineProfile]:
    """This host's machine profiles: the ones cached in the store for it (and
    ``request.device``, when given), else — or with ``refresh`` — one measured now and
    cached. A bad dtype, thread count, device or store is a
    :class:`~attnprof.errors.UsageError` before anything is measured."""
    import platform

    from attnprof.store import open_store, store_path
    from attnprof.workload.problem import canonical_dtype
    from attnprof.workload.settings import parse_threads

    dtypes = [canonical_dtype(d) for d in (request.dtypes or DEFAULT_DTYPES)]  # before work
    if request.threads is not None:
        parse_threads(request.threads)  # before any work
    path = store_path(None if request.store is None else os.fspath(request.store))
    assert path is not None
    host = platform.node() or "unknown"
    with open_store(path, create=False) as store:  # checked now; made only to save into
        profiles = [] if request.refresh else store.machines(host, request.device)
    if profiles:
        return list(profiles)
    profile = _measure(request, dtypes, progress)
    with open_store(path, create=True) as store:
        store.save_machine(host, profile.environment.device, profile)
    return [profile]


def _measure(request: EnvRequest, dtypes: list[str], progress: EnvProgress | None
             ) -> MachineProfile:
    from attnprof.measure.device import check_device, check_dtype, default_device
    from attnprof.measure.machine import measure_machine
    from attnprof.measure.threads import measuring_threads
    from attnprof.workload.settings import default_threads, parse_threads

    device = request.device or default_device()
    threads = (default_threads(device) if request.threads is None
               else parse_threads(request.threads))
    check_device(device)
    for dtype in dtypes:
        check_dtype(device, dtype)
    if progress is not None:
        progress.note(f"measuring this machine's ceilings on {device} ({', '.join(dtypes)}) …")
    with measuring_threads(threads):
        return measure_machine(device, dtypes)
