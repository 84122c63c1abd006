"""Where the store is: ``--store PATH``, else ``$ATTNPROF_STORE``, else the user's data folder.

The default lives under :func:`platformdirs.user_data_dir` (``~/.local/share/attnprof`` on
Linux, ``~/Library/Application Support/attnprof`` on macOS, ``%LOCALAPPDATA%\\attnprof`` on
Windows): the place each platform keeps an application's own data, not a cache that may be
cleared.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["STORE_ENV", "STORE_FILE", "default_store_path", "store_path"]

#: The environment variable that names the store (CI jobs, tests, a shared project store).
STORE_ENV = "ATTNPROF_STORE"
STORE_FILE = "runs.db"


def default_store_path() -> Path:
    """``runs.db`` in the user's data folder for attnprof (not created here)."""
    import platformdirs  # imported where used: only commands that store need it

    return Path(platformdirs.user_data_dir("attnprof", appauthor=False)) / STORE_FILE


def store_path(flag: str | None = None, *, no_store: bool = False) -> Path | None:
    """The store a command uses: ``None`` with ``--no-store``; else the ``--store`` flag,
    else ``$ATTNPROF_STORE`` (an empty value counts as unset), else the default."""
    if no_store:
        return None
    if flag is not None:
        if not flag.strip():
            from attnprof.errors import UsageError

            raise UsageError("--store is an empty path; give a file path such as runs.db")
        return Path(flag)
    env = os.environ.get(STORE_ENV, "")
    return Path(env) if env.strip() else default_store_path()
