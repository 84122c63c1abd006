"""The inline executor: the point runs in this process, as a plain call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attnprof.run.compare import run_point

if TYPE_CHECKING:
    from attnprof.record.compare import CompareRecord
    from attnprof.run.compare import OnRecord, Progress
    from attnprof.run.point import Point

__all__ = ["InlineExecutor"]


class InlineExecutor:
    """Run the point here: no isolation, no start-up cost."""

    name = "inline"

    def run(self, point: Point, *, progress: Progress | None = None,
            on_record: OnRecord | None = None) -> CompareRecord:
        """Measure ``point`` in this process."""
        return run_point(point, progress=progress, on_record=on_record)
