"""CUDA-only (skipped without a CUDA device): the attention time of a training step on a
GPU trace is the device time of the kernels SDPA launched, forward and backward.

The truth is read from the raw events without attnprof: each kernel's launch (by its
``correlation``) lies inside an ``aten::scaled_dot_product_attention`` call or inside an
autograd node that torch.profiler's ``fwdbwd`` arrows tie to an op inside such a call.
"""

from __future__ import annotations

import bisect
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import torch

from attnprof.analysis.analyze import analyze_trace
from attnprof.trace import load_trace

pytestmark = pytest.mark.gpu

NODE = "autograd::engine::evaluate_function: "


def _trace(tmp_path: Path) -> Path:
    transformers = pytest.importorskip("transformers")
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        n_layer=2, n_embd=128, n_head=4, vocab_size=256, n_positions=128, bos_token_id=0,
        eos_token_id=0, attn_pdrop=0.0, attn_implementation="sdpa")).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 256, (4, 128), device="cuda")
    path = tmp_path / "cuda-train.json"
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        for _ in range(4):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(input_ids=ids).logits
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, 256), ids.view(-1))
            loss.backward()
            opt.step()
            opt.zero_grad()
            torch.cuda.synchronize()
            prof.step()
    prof.export_chrome_trace(str(path))
    return path


def _holder(ranges: list[dict[str, Any]]) -> Any:
    by_tid: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in sorted(ranges, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        mine = by_tid[e["tid"]]
        if not (mine and e["ts"] + e["dur"] <= mine[-1]["ts"] + mine[-1]["dur"]):
            mine.append(e)  # outermost only
    starts = {t: [e["ts"] for e in es] for t, es in by_tid.items()}

    def holding(tid: Any, ts: float) -> dict[str, Any] | None:
        k = bisect.bisect_right(starts.get(tid, []), ts) - 1
        if k < 0:
            return None
        e = by_tid[tid][k]
        return e if ts <= e["ts"] + e["dur"] else None

    return holding


def _truth(path: Path) -> tuple[list[float], list[float]]:
    """Per profiled step: forward and backward attention kernel time, µs."""
    events = json.loads(path.read_text())["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    in_sdpa = _holder([e for e in ops if e["name"] == "aten::scaled_dot_product_attention"])
    starts = {(e["tid"], e["ts"]): e["id"] for e in events
              if e.get("cat") == "fwdbwd" and e.get("ph") == "s"}
    ends = {e["id"]: (e["tid"], e["ts"]) for e in events
            if e.get("cat") == "fwdbwd" and e.get("ph") == "f"}
    in_node = _holder([e for e in ops if e["name"].startswith(NODE)])
    linked = [in_node(*ends[starts[(e["tid"], e["ts"])]]) for e in ops
              if starts.get((e["tid"], e["ts"])) in ends and in_sdpa(e["tid"], e["ts"])]
    in_backward = _holder([n for n in linked if n is not None])
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in
                e.get("args", {})}
    steps = sorted((e for e in events if e.get("cat") == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    fwd, bwd = [0.0] * len(steps), [0.0] * len(steps)
    for k in events:
        if k.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        launch = launches.get(k.get("args", {}).get("correlation"))
        if launch is None:
            continue
        step = next((i for i, s in enumerate(steps)
                     if s["ts"] <= launch["ts"] <= s["ts"] + s["dur"]), None)
        if step is None:
            continue
        if in_sdpa(launch["tid"], launch["ts"]):
            fwd[step] += k["dur"]
        elif in_backward(launch["tid"], launch["ts"]):
            bwd[step] += k["dur"]
    return fwd, bwd


def test_a_cuda_training_steps_attention_is_its_kernels_forward_and_backward(
        tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    path = _trace(tmp_path)
    fwd, bwd = _truth(path)
    (region,) = analyze_trace(load_trace(path)).regions
    att = region.attention
    assert att is not None and att.basis == "device time" and att.found_by == ["name"]
    assert region.instances == len(fwd) == 2
    assert all(f > 0 for f in fwd) and all(b > 0 for b in bwd)
    assert att.forward_us == pytest.approx(sum(fwd) / 2, rel=0.05)
    assert att.backward_us == pytest.approx(sum(bwd) / 2, rel=0.05)
    assert region.attention_share is not None and 0 < region.attention_share < 1
    assert att.backward_ops  # the backward kernels, by name
