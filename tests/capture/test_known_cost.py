"""Acceptance 2 of issue 28: ``attnprof.capture`` of a loop whose costs are known.

Attention's forward and backward, and the MLP's, spend set Python-level times inside custom
autograd Functions and time themselves; each step's wall time is taken by the loop. The
captured record's attention share of the step (the step it reports: the median one) is
within 3 points of that step's measured truth, and ``attnprof analyze`` of the same trace
gives the same share within 1 point.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import torch
from known_loop import SPENT, KnownCostModel

import attnprof
from attnprof.record.family import load_record


def _loop(cap: attnprof.run.capture.Capture, model: torch.nn.Module, steps: int,
          truth: list[tuple[float, float]]) -> None:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(4, 16)
    for _ in range(steps):
        SPENT.clear()
        t0 = time.perf_counter()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        truth.append((SPENT.get("attention", 0.0), time.perf_counter() - t0))
        cap.step()


def test_capture_gives_the_known_attention_share(tmp_path: Path) -> None:
    model = KnownCostModel()
    truth: list[tuple[float, float]] = []
    with attnprof.capture(model, out=tmp_path, label="known", store=False,
                          attention_module="SlowAttention") as cap:
        _loop(cap, model, 5, truth)
    record = cap.record
    assert record is not None and record.status == "complete"
    model_part = record.reports[0].model
    assert model_part is not None and model_part.steps == 3
    assert model_part.backward_attributed  # the backward nodes went to their forward's label
    recorded = truth[2:5]  # wait=1, warmup=1: steps 3 to 5 are the recorded ones
    attention_s, step_s = recorded[model_part.step]
    expected = attention_s / step_s
    assert model_part.attention_share is not None
    assert abs(model_part.attention_share - expected) <= 0.03, (
        model_part.attention_share, expected, model_part.step_attention_shares,
        [a / s for a, s in recorded])
    # Each layer's attention is its forward and backward: a tenth of the step or more.
    for layer in model_part.layers:
        assert layer.backward_cpu_us is not None and layer.backward_cpu_us > 0

    # The same trace through `attnprof analyze`: the same share.
    assert cap.trace_path is not None and cap.trace_path.is_file()
    out = tmp_path / "analysed.json"
    done = subprocess.run([sys.executable, "-m", "attnprof", "analyze", str(cap.trace_path),
                           "--json", str(out), "--no-store"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode in (0, 1), done.stderr
    analysed = load_record(out)
    again = analysed.reports[0].model  # type: ignore[union-attr]
    assert again is not None and again.attention_share is not None
    assert abs(again.attention_share - model_part.attention_share) <= 0.01
