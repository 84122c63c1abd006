"""The git commit of the working folder, recorded beside every stored run."""

from __future__ import annotations

import subprocess

__all__ = ["git_state"]


def git_state(cwd: str) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git work tree holding ``cwd``; ``(None, None)`` outside
    one, or without git. ``dirty``: tracked files differ from the commit (untracked files
    do not count: build outputs and traces would always make it so). One ``git status``
    call gives both (its porcelain v2 header names the commit)."""
    try:
        done = subprocess.run(["git", "status", "--porcelain=v2", "--branch",
                               "--untracked-files=no"], cwd=cwd, capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None, None
    if done.returncode != 0:
        return None, None
    commit, dirty = None, False
    for line in done.stdout.splitlines():
        if line.startswith("# branch.oid "):
            oid = line.split()[2]
            commit = oid if oid != "(initial)" else None
        elif not line.startswith("#"):
            dirty = True
    return commit, dirty if commit is not None else None
