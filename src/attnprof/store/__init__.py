"""The results store: every record a command makes, kept in one local SQLite file.

:func:`open_store` opens (or, for saving, creates) the store at the path the user chose —
``--store PATH``, else ``ATTNPROF_STORE``, else ``runs.db`` under the user's data folder
(:func:`default_store_path`) — and checks it is attnprof's before anything is run or
written. :class:`Store` saves records (with the label, the git commit of the working folder
and the command line), lists them with filters, finds one by run id, unique prefix or
label, removes one, and caches this machine's environment and ceilings
(``attnprof env``). Only the standard library's ``sqlite3`` is used: WAL, so readers never
wait for a writer, and a busy timeout, so several processes may save at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from attnprof.store.location import STORE_ENV, default_store_path, store_path

if TYPE_CHECKING:
    from attnprof.store.store import PreparedRun, RunQuery, Store, StoredRun, open_store

__all__ = ["STORE_ENV", "PreparedRun", "RunQuery", "Store", "StoredRun", "default_store_path",
           "open_store", "store_path"]


#: Loaded on first use: a command run with ``--no-store`` asks only where the store is
#: (:mod:`attnprof.store.location`), and needs neither ``sqlite3`` nor the record family.
_FROM_STORE = frozenset({"PreparedRun", "RunQuery", "Store", "StoredRun", "open_store"})


def __getattr__(name: str) -> Any:
    if name in _FROM_STORE:
        return getattr(importlib.import_module("attnprof.store.store"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
