"""Model runs go through the executor seam (issue 17): ``attnprof model --executor process``
runs the implementations in a worker process, so one that segfaults becomes a ``crashed``
row and the others keep theirs. A real segfault (SIGSEGV) in a real worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from attnprof.record.model import ModelRecord

#: A tiny Llama built on eager attention whose SDPA path segfaults: the implementation a
#: user's broken extension or driver would take down. The model is built and located
#: (on eager) in the parent before any worker starts.
SEGFAULTS_ON_SDPA = '''
import os
import signal

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM


def _segfault(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGSEGV)


def make():
    F.scaled_dot_product_attention = _segfault
    config = LlamaConfig(num_hidden_layers=1, hidden_size=32, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=64, vocab_size=64,
                         attn_implementation="eager")
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    return model, torch.randint(0, 64, (1, 8))
'''

FLAGS = ["--min-time", "0.01", "--rounds", "1", "--trace-steps", "1"]


def run_in_a_worker(tmp_path: Path, source: str, *flags: str
                    ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``attnprof model model.py:make --attn eager,sdpa --executor process`` on the factory
    ``source``, as a user runs it; the process and where its record is."""
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    out, tmp = tmp_path / "run.json", tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "attnprof", "model", "model.py:make", *FLAGS, "--attn",
         "eager,sdpa", "--executor", "process", *flags, "--json", str(out), "--no-store"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "COLUMNS": "200", "TMPDIR": str(tmp)})
    # The worker that died left its temporary traces: its parent removed them.
    assert not list(tmp.glob("attnprof-*")), list(tmp.iterdir())
    return proc, out


def test_a_segfaulting_implementation_is_a_crashed_row_and_eager_keeps_its_own(
        tmp_path: Path) -> None:
    proc, out = run_in_a_worker(tmp_path, SEGFAULTS_ON_SDPA, "--phase", "prefill,train")
    assert proc.returncode in (0, 3), proc.stderr  # 3: this machine's load made it noisy
    record = ModelRecord.load(out)
    assert record.status == "complete"
    rows = {(r.implementation, r.phase): r for r in record.runs}
    assert list(rows) == [("eager", "prefill"), ("eager", "train"), ("sdpa", "prefill"),
                          ("sdpa", "train")]
    for phase in ("prefill", "train"):
        eager = rows["eager", phase]
        assert eager.status == "ok", eager.reason
        assert eager.latency_ms is not None and eager.attribution is not None
        sdpa = rows["sdpa", phase]
        assert sdpa.status == "crashed" and "SIGSEGV" in sdpa.reason, sdpa.reason
    table = proc.stdout.split("ms / step: median")[0]  # the runs table
    assert table.count("crashed") == 2 and "SIGSEGV" in table


#: The same tiny Llama whose SDPA path never returns (a spin no exception reaches).
HANGS_ON_SDPA = SEGFAULTS_ON_SDPA.replace(
    "def _segfault(*args, **kwargs):\n    os.kill(os.getpid(), signal.SIGSEGV)",
    "def _segfault(*args, **kwargs):\n    while True:\n        pass")


def test_a_hanging_implementation_is_a_timeout_row_after_timeout(tmp_path: Path) -> None:
    # Shorter than the worker's start-up (torch, transformers, the model's build), which
    # the limit does not count: only the implementation's phases.
    proc, out = run_in_a_worker(tmp_path, HANGS_ON_SDPA, "--timeout", "5")
    assert proc.returncode in (0, 3), proc.stderr
    rows = {r.implementation: r for r in ModelRecord.load(out).runs}
    assert rows["eager"].status == "ok", rows["eager"].reason
    assert rows["sdpa"].status == "timeout", rows["sdpa"].reason
    assert "no progress for 5 s" in rows["sdpa"].reason


def test_timeout_needs_the_process_executor(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "attnprof", "model", "llama", "--timeout", "5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "attnprof: error: --timeout 5 needs --executor process: in this process nothing "
        "can stop a hung implementation"]
