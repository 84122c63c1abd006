"""On a CUDA machine: the gloo job's ranks on the one GPU, with CUDA kernels in their
traces — the divergent rank's math path against the others' fused kernel, and HTA's
breakdown over real device events. Skipped without CUDA (run by scripts/gpu_check.sh)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.commands.analyze import AnalyzeRequest
from attnprof.commands.analyze import run as analyze
from attnprof.record.ranks import RanksRecord

GLOO_JOB = Path(__file__).resolve().parent / "gloo_job.py"


@pytest.mark.gpu
def test_a_rank_on_the_math_path_diverges_on_a_gpu(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(GLOO_JOB), str(tmp_path), "--device", "cuda",
                           "--world-size", "2", "--sets", "divergent,straggler"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    paths = tuple(sorted(str(p) for p in (tmp_path / "divergent").iterdir()))
    record = analyze(AnalyzeRequest(paths=paths))
    assert isinstance(record, RanksRecord)
    assert all(r.device == "cuda" and r.kernel_source == "kernels" for r in record.ranks)
    assert all(r.temporal is not None and r.temporal.compute_us > 0 for r in record.ranks)
    found = [f for f in record.findings if f.rule == "rank-divergence"]
    assert len(found) == 1
    said = " ".join(found[0].evidence)
    assert "rank 1 ran aten::_scaled_dot_product_attention_math" in said
    assert "_efficient_attention" in said
    # gloo moves CUDA tensors through the host: the collectives are its annotations.
    paths = tuple(sorted(str(p) for p in (tmp_path / "straggler").iterdir()))
    record = analyze(AnalyzeRequest(paths=paths))
    assert isinstance(record, RanksRecord)
    assert [f.data["rank"] for f in record.findings if f.rule == "straggler"] == [1]
