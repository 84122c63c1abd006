"""The attention time of a training step, forward and backward, on traces of a transformers
model trained the ordinary way (AdamW, cross-entropy, torch.profiler on a schedule).

The truth is computed from each trace's raw events, without attnprof: SDPA's calls
(``aten::scaled_dot_product_attention``) and, for hand-written (eager) attention, the ATen
ops that ran inside transformers' ``eager_attention_forward`` Python frame (the trace is
taken ``with_stack``) from its first matmul to its last; the backward is the autograd nodes
that torch.profiler's own ``fwdbwd`` flow arrows tie to those forward ops. attnprof finds
the same by op names, sequence numbers and the matmul → softmax → matmul pattern, never by
Python frames.
"""

from __future__ import annotations

import bisect
import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.record.trace_report import RegionReport
from attnprof.trace import load_trace

VOCAB, SEQ = 128, 32
CASES = [("gpt2", "sdpa"), ("gpt2", "eager"), ("llama", "sdpa"), ("llama", "eager")]
NODE = "autograd::engine::evaluate_function: "
#: The truth and attnprof count the same ops of the same trace (see ``_core``), so only the
#: sums' rounding may part them: a looser bound let a timing-dependent gap through (eager
#: Llama's trailing ``contiguous`` was 10-19% of its forward, and failed CI at 15%).
TOLERANCE = 1e-3


def _model(kind: str, impl: str) -> Any:
    import transformers

    if kind == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=64,
            bos_token_id=0, eos_token_id=0, attn_implementation=impl))
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=64,
        bos_token_id=0, eos_token_id=0, pad_token_id=0, attn_implementation=impl))


def _train_and_trace(kind: str, impl: str, folder: Path) -> Path:
    """Four steps of an ordinary training loop, the last two profiled; the trace's path."""
    import torch
    from torch.profiler import (
        ProfilerActivity,
        profile,
        record_function,
        schedule,
        tensorboard_trace_handler,
    )

    torch.manual_seed(0)
    model = _model(kind, impl).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, VOCAB, (2, SEQ))
    folder.mkdir(parents=True)
    path = folder / f"{kind}-{impl}.json"
    # GPT-2 the TensorBoard way, Llama by export_chrome_trace: both as users write them.
    handler = tensorboard_trace_handler(str(folder)) if kind == "gpt2" else None
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True,
                 schedule=schedule(wait=1, warmup=1, active=2),
                 on_trace_ready=handler) as prof:
        for _ in range(4):
            with record_function("fwd"):
                logits = model(input_ids=ids).logits
                loss = torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), ids.view(-1))
            with record_function("bwd"):
                loss.backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    if handler is None:
        prof.export_chrome_trace(str(path))
        return path
    (written,) = folder.glob("*.pt.trace.json")
    return written


@pytest.fixture(scope="session")
def training_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """(model, attn_implementation) -> its training trace, captured once per session."""
    pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("training")
    return {(kind, impl): _train_and_trace(kind, impl, root / f"{kind}-{impl}")
            for kind, impl in CASES}


# ---- the truth, from the raw events ------------------------------------------------------

def _events(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def _inside(e: dict[str, Any], outer: dict[str, Any]) -> bool:
    return (e["tid"] == outer["tid"] and outer["ts"] <= e["ts"]
            and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"])


def _outermost(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events not inside another of them (longest first at a shared start)."""
    out: list[dict[str, Any]] = []
    for e in sorted(events, key=lambda e: (e["tid"], e["ts"], -e["dur"])):
        if not (out and _inside(e, out[-1])):
            out.append(e)
    return out


class _Ranges:
    """Non-nested events per thread, found by the moment they hold (bisect)."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.by_tid: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for e in _outermost(events):
            self.by_tid[e["tid"]].append(e)
        self.starts = {t: [e["ts"] for e in es] for t, es in self.by_tid.items()}

    def holding(self, tid: Any, ts: float, dur: float = 0.0) -> dict[str, Any] | None:
        k = bisect.bisect_right(self.starts.get(tid, []), ts) - 1
        if k < 0:
            return None
        e = self.by_tid[tid][k]
        return e if ts + dur <= e["ts"] + e["dur"] else None


def _core(ops: list[dict[str, Any]], impl: str) -> list[dict[str, Any]]:
    """One attention call's ops less the layout around its core, attnprof's convention.

    SDPA's call is its core. Eager's frame also transposes the keys before its scores
    matmul and makes the output contiguous after its value matmul; transformers' SDPA path
    does the same outside the SDPA call, so neither counts them: the core runs from the
    first matmul's start to the last one's end.
    """
    if impl == "sdpa":
        return ops
    matmuls = [e for e in ops if e["name"] == "aten::matmul"]
    start = min(e["ts"] for e in matmuls)
    end = max(e["ts"] + e["dur"] for e in matmuls)
    return [e for e in ops if start <= e["ts"] and e["ts"] + e["dur"] <= end]


def _truth(path: Path, impl: str) -> list[tuple[float, float]]:
    """Per profiled step: (forward µs, backward µs) of attention, from the raw events."""
    events = _events(path)
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    if impl == "sdpa":
        frames = _Ranges([e for e in ops if e["name"] == "aten::scaled_dot_product_attention"])
    else:
        frames = _Ranges([e for e in events if e.get("cat") == "python_function"
                          and e["name"].endswith(": eager_attention_forward")])
    by_frame: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in ops:
        frame = None if e["name"].startswith(NODE) else frames.holding(e["tid"], e["ts"], e["dur"])
        if frame is not None:
            by_frame[id(frame)].append(e)
    inside = [e for es in by_frame.values() for e in _core(es, impl)]
    forward = _outermost(inside)
    # The backward: the engine's ranges around the nodes at the end of torch.profiler's
    # fwdbwd arrows from forward ops inside the attention (SDPA's call, eager's core).
    starts = {(e["tid"], e["ts"]): e["id"] for e in events
              if e.get("cat") == "fwdbwd" and e.get("ph") == "s"}
    ends = {e["id"]: (e["tid"], e["ts"]) for e in events
            if e.get("cat") == "fwdbwd" and e.get("ph") == "f"}
    nodes = _Ranges([e for e in ops if e["name"].startswith(NODE)])
    backward = {id(n): n for n in (
        nodes.holding(*ends[starts[(e["tid"], e["ts"])]]) for e in inside
        if starts.get((e["tid"], e["ts"])) in ends) if n is not None}.values()
    steps = sorted((e for e in events if e.get("cat") == "user_annotation"
                    and e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    return [(sum(e["dur"] for e in forward if _inside(e, s)),
             sum(e["dur"] for e in backward if _inside(e, s))) for s in steps]


def _region(path: Path, pattern: str | None = None) -> RegionReport:
    (region,) = analyze_trace(load_trace(path), region_pattern=pattern).regions
    return region


# ---- the tests ---------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "impl"), CASES)
def test_a_training_steps_attention_is_its_forward_and_backward(
        kind: str, impl: str, training_traces: dict[tuple[str, str], Path]) -> None:
    path = training_traces[(kind, impl)]
    truth = _truth(path, impl)
    region = _region(path)
    att = region.attention
    assert att is not None and region.instances == len(truth) == 2
    for k, (fwd, bwd) in enumerate(truth):
        assert fwd > 0 and bwd > 0
        assert att.steps_us[k] == pytest.approx(fwd + bwd, rel=TOLERANCE), (k, fwd, bwd)
    n = len(truth)
    assert att.forward_us == pytest.approx(sum(f for f, _ in truth) / n, rel=TOLERANCE)
    assert att.backward_us == pytest.approx(sum(b for _, b in truth) / n, rel=TOLERANCE)
    assert region.attention_us_per_forward == pytest.approx(att.forward_us + att.backward_us)
    assert region.attention_share is not None and 0 < region.attention_share < 1
    if impl == "sdpa":  # found by name: nothing inferred
        assert att.found_by == ["name"] and att.inferred_us == 0.0
        assert att.forward_ops == {"aten::scaled_dot_product_attention": 2.0}
    else:  # found by its pattern: all of it inferred, with the ops counted
        assert att.found_by == ["pattern"]
        assert att.inferred_us == pytest.approx(att.per_step_us)
        assert att.forward_ops["aten::matmul"] == 4 and att.forward_ops["aten::softmax"] == 2
        assert "SoftmaxBackward0" in att.backward_ops


def test_the_users_own_backward_region_holds_the_backward_attention(
        training_traces: dict[tuple[str, str], Path]) -> None:
    for (_kind, impl), path in training_traces.items():
        truth = _truth(path, impl)
        bwd, fwd = _region(path, "^bwd$"), _region(path, "^fwd$")
        assert bwd.attention is not None and fwd.attention is not None
        assert bwd.attention.forward_us == 0.0 and fwd.attention.backward_us == 0.0
        assert bwd.attention_us_per_forward == pytest.approx(
            sum(b for _, b in truth) / len(truth), rel=TOLERANCE)
        assert fwd.attention_us_per_forward == pytest.approx(
            sum(f for f, _ in truth) / len(truth), rel=TOLERANCE)


def test_flash_on_cpu_backward_is_a_compute_op(
        training_traces: dict[tuple[str, str], Path]) -> None:
    # Llama's SDPA ran the CPU flash kernel; its backward computes into gradients it made
    # with aten::zeros, and is a compute op of its own (the kernel table shows it).
    region = _region(training_traces[("llama", "sdpa")])
    names = {k.name for k in region.kernels}
    assert "aten::_scaled_dot_product_flash_attention_for_cpu_backward" in names


PUBLIC = Path(__file__).resolve().parents[2] / "examples" / "traces"  # the public set, kept here
PUBLIC_NAMES = sorted(p.name for p in PUBLIC.glob("*.json.gz")) if PUBLIC.is_dir() else []


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_public_traces_have_no_attention_and_shares_in_range(name: str, load_public: Any
                                                             ) -> None:
    # None of them runs attention (CNNs, toy models; a loss's log_softmax is no pattern),
    # their training steps' backward included.
    _, report = load_public(name)
    for region in report.regions:
        att = region.attention
        assert att is not None and att.found_by == [] and att.per_step_us == 0.0
        assert region.attention_share in (0.0, None)
        assert att.forward_ops == {} and att.backward_ops == {}


def test_the_ranks_view_reads_the_same_attention_time(
        training_traces: dict[tuple[str, str], Path]) -> None:
    from attnprof.analysis.ranks.identify import RankFile
    from attnprof.analysis.ranks.summary import read_rank

    for path in training_traces.values():
        region = _region(path)
        summary = read_rank(RankFile(path=str(path), rank=0, rank_from=None, world_size=1))
        assert summary.error is None
        assert summary.attention_us_per_step == pytest.approx(region.attention_us_per_forward)
        assert summary.attention_share == pytest.approx(region.attention_share)
