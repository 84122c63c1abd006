"""The git commit of the working folder, recorded beside every stored run."""

from __future__ import annotations

import subprocess

__all__ = ["git_state"]


def git_state(cwd: str) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git work tree holding ``cwd``; ``(None, None)`` outside
    one, or without git. ``dirty``: tracked files differ from the commit (untracked files
    do not count: build outputs and traces would always make it so)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                              text=True, timeout=10, check=False)
        if head.returncode != 0:
            return None, None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=cwd, capture_output=True, text=True, timeout=10,
                                check=False)
    except (OSError, subprocess.SubprocessError):
        return None, None
    commit = head.stdout.strip() or None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return commit, dirty
