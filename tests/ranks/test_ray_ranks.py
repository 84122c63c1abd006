"""Issue 20, acceptance 5: ranks read as Ray tasks on a local instance give the same
per-rank record as local worker processes, and a corrupt rank is a row, not a crash."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from attnprof.commands.analyze import AnalyzeRequest
from attnprof.commands.analyze import run as analyze
from attnprof.record.ranks import RanksRecord

ray = pytest.importorskip("ray")


@pytest.fixture
def with_a_corrupt_rank(gloo_sets: dict[str, Path], tmp_path: Path) -> Path:
    """The divergent set, rank 1's trace cut off half way (a truncated gzip stream)."""
    folder = tmp_path / "ranks"
    shutil.copytree(gloo_sets["divergent"], folder)
    whole = (folder / "rank-1.json.gz").read_bytes()
    (folder / "rank-1.json.gz").write_bytes(whole[:len(whole) // 2])
    return folder


def _read(folder: Path, executor: str) -> RanksRecord:
    # Relative paths: a Ray task runs in another folder, so the driver sends them absolute.
    paths = tuple(sorted(os.path.relpath(p) for p in folder.iterdir()))
    record = analyze(AnalyzeRequest(paths=paths, executor=executor))
    assert isinstance(record, RanksRecord)
    return record


def test_ray_gives_the_same_record_as_local_workers(local_ray: None,
                                                    with_a_corrupt_rank: Path) -> None:
    local = _read(with_a_corrupt_rank, "process")
    remote = _read(with_a_corrupt_rank, "ray")
    assert remote.executor == "ray" and remote.workers is None
    assert remote.status == "complete"
    assert remote.ranks == local.ranks  # every rank's summary, field for field
    assert remote.steps == local.steps and remote.findings == local.findings
    assert remote.notes == local.notes
    # The truncated rank is a row with its error; the others were read.
    bad = remote.rank(1)
    assert bad.error is not None and "truncated" in bad.error and not bad.steps
    assert [r.rank for r in remote.ranks if r.error is None] == [0, 2]
    assert any(n.startswith("rank 1 could not be read") for n in remote.notes)
    # Rank 2 still diverges from rank 0 (no majority of two: both are named).
    assert [f.rule for f in remote.findings] == ["rank-divergence"]
