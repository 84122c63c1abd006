"""How a group of ranks is written in notes and findings: ``rank 3``, ``ranks 0, 1``,
``ranks 2-127`` (runs of three or more consecutive ranks as a range)."""

from __future__ import annotations

__all__ = ["ranks_text"]


def ranks_text(ranks: list[int] | set[int] | tuple[int, ...]) -> str:
    """``rank 3`` / ``ranks 0, 1, 5`` / ``ranks 0-3, 7``, in order, each rank once."""
    ordered = sorted(set(ranks))
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(r) for r in ordered[i:j + 1])
        i = j + 1
    return "ranks " + ", ".join(parts)
