"""``attnprof.capture`` under DDP: two gloo ranks on the CPU capture into one run folder,
one trace each, that ``attnprof analyze FOLDER`` reads as the ranks of one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.record.family import load_record
from attnprof.record.ranks import RanksRecord

JOB = Path(__file__).with_name("ddp_capture_job.py")


@pytest.mark.slow
def test_two_gloo_ranks_capture_into_one_run_folder(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(JOB), str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in (0, 1)]
    folder = Path(ranks[0]["folder"])
    assert ranks[1]["folder"] == str(folder)  # rank 0's run id, shared
    assert sorted(p.name for p in folder.iterdir()) == [
        "record-rank0.json", "record-rank1.json",
        "trace-rank0.pt.trace.json.gz", "trace-rank1.pt.trace.json.gz"]
    # Only rank 0 stores; both records are in the folder, with the run's id.
    assert ranks[0]["stored_as"] is not None and ranks[1]["stored_as"] is None
    for r in ranks:
        record = load_record(r["record"])
        assert record.run_id == ranks[0]["stored_as"]
        assert record.reports[0].model is not None  # type: ignore[union-attr]
        assert record.reports[0].model.steps == 3  # type: ignore[union-attr]
        assert r["training"]
    out = tmp_path / "ranks.json"
    read = subprocess.run([sys.executable, "-m", "attnprof", "analyze", str(folder),
                           "--json", str(out), "--no-store", "--executor", "inline"],
                          capture_output=True, text=True, timeout=180)
    assert read.returncode in (0, 1), read.stderr
    ranks_record = load_record(out)
    assert isinstance(ranks_record, RanksRecord)
    assert ranks_record.world_size == 2 and [r.rank for r in ranks_record.ranks] == [0, 1]
    assert all(len(r.steps) == 3 for r in ranks_record.ranks)
