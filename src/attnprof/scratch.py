"""Scratch folders that outlive no run, even one whose worker was killed.

A worker process that dies — a segfault, the OOM killer, SIGKILL for a hang past the time
limit — runs no clean-up, so a temporary folder it made (a model's traces when no
``--trace`` folder was asked for) would stay in ``/tmp`` for good. The parent therefore
makes one scratch folder per worker, names it to the worker in :data:`SCRATCH_ENV`, and
removes it once the worker has ended however it ended; the worker makes its temporary
folders inside. (Not ``TMPDIR``: torch's compile caches live under the temporary folder,
and a worker must find the ones earlier runs filled.)
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["SCRATCH_ENV", "scratch_dir"]

#: The environment variable that names a worker's scratch folder (set by its parent).
SCRATCH_ENV = "ATTNPROF_SCRATCH"


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder: inside the parent's scratch folder when this process is a
    worker given one, else in the system's temporary folder. Use it as a context."""
    parent = os.environ.get(SCRATCH_ENV)
    inside = parent if parent and Path(parent).is_dir() else None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=inside)
