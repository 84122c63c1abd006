"""Acceptance 3 of issue 28: ``attnprof.capture`` around an 8-step AdamW loop of a tiny
transformers model (random weights, no download) returns an analyze record that
``load_record``, ``attnprof show``, ``attnprof diff`` and the HTML report take; the model
and torch are left as they were; the labels' cost is reported. The Trainer callback makes
the same kind of record from ``Trainer.train()``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import attnprof
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.family import load_record
from attnprof.torch_state import TorchState

transformers = pytest.importorskip("transformers")

TINY = {"gpt2": ("GPT2Config", {"n_layer": 2, "n_embd": 32, "n_head": 4, "vocab_size": 64,
                                "n_positions": 64, "bos_token_id": 0, "eos_token_id": 0}),
        "llama": ("LlamaConfig", {"num_hidden_layers": 2, "hidden_size": 32,
                                  "intermediate_size": 64, "num_attention_heads": 4,
                                  "num_key_value_heads": 2, "vocab_size": 64,
                                  "max_position_embeddings": 64, "bos_token_id": 0,
                                  "eos_token_id": 0})}


def tiny_model(name: str) -> torch.nn.Module:
    config_cls, sizes = TINY[name]
    config = getattr(transformers, config_cls)(**sizes, attn_implementation="sdpa")
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config)


def _attnprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attnprof", *args], capture_output=True,
                          text=True, timeout=180)


def _capture_adamw(name: str, out: Path) -> tuple[Any, torch.nn.Module]:
    model = tiny_model(name)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(1))
    with attnprof.capture(model, out=out, label=f"adamw-{name}") as cap:
        for _ in range(8):
            logits = model(input_ids=ids).logits
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, 64), ids[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad()
            cap.step()
    return cap, model


def test_capture_of_an_adamw_loop(tmp_path: Path) -> None:
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    sdpa, functions = F.scaled_dot_product_attention, dict(ALL_ATTENTION_FUNCTIONS.items())
    state = TorchState()
    cap, model = _capture_adamw("gpt2", tmp_path)
    # Nothing of the model or of torch is left changed (the loop's own random draws aside).
    assert model.training
    assert all("forward" not in m.__dict__ for m in model.modules())
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert F.scaled_dot_product_attention is sdpa
    assert dict(ALL_ATTENTION_FUNCTIONS.items()) == functions
    assert [c for c in state.restore() if not c.startswith("RNG state")] == []

    assert cap.record_path is not None and cap.trace_path is not None
    assert cap.record_path.parent == cap.trace_path.parent == cap.folder
    record = load_record(cap.record_path)
    assert isinstance(record, AnalyzeRecord) and record.status == "complete"
    assert record.run_id == cap.record.run_id == cap.stored_as
    report = record.reports[0]
    assert report.model is not None and report.model.steps == 3
    assert [layer.name for layer in report.model.layers] == ["transformer.h.0",
                                                             "transformer.h.1"]
    assert report.model.attention_share is not None and 0 < report.model.attention_share < 1
    assert report.model.backward_attributed
    block = report.attnprof["capture"]  # type: ignore[index]
    assert block["steps_run"] == 8 and block["steps_recorded"] == 3
    assert block["labels_per_step"] > 0 and block["label_cost_us"] > 0
    assert block["labels_cost_us_per_step"] == pytest.approx(
        block["labels_per_step"] * block["label_cost_us"])
    assert 0 < block["labels_cost_share"] < 1

    shown = _attnprof("show", cap.stored_as)
    assert shown.returncode == 0, shown.stderr
    assert "captured by attnprof ('adamw-gpt2'): 3 of 3 scheduled steps recorded" in shown.stdout
    assert "attnprof's labels cost" in shown.stdout
    assert "transformer.h.0" in shown.stdout

    other, _ = _capture_adamw("llama", tmp_path)
    diffed = _attnprof("diff", str(cap.record_path), other.stored_as)
    assert diffed.returncode == 0, diffed.stderr
    assert "ProfilerStep" in diffed.stdout
    page = tmp_path / "page.html"
    made = _attnprof("report", "-o", str(page), str(cap.record_path), str(other.record_path))
    assert made.returncode == 0, made.stderr
    shown_page = page.read_text(encoding="utf-8")
    assert "adamw-gpt2" in shown_page and "labels cost" in shown_page


def test_trainer_callback_makes_the_same_record(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")  # transformers' Trainer needs it on torch
    from attnprof.integrations.transformers import AttnprofCallback

    model = tiny_model("gpt2")
    ids = torch.randint(0, 64, (8, 16), generator=torch.Generator().manual_seed(2))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"), max_steps=6, per_device_train_batch_size=2,
        report_to="none", use_cpu=True, save_strategy="no", logging_strategy="no",
        disable_tqdm=True)
    callback = AttnprofCallback(out=tmp_path, label="trainer", store=False)
    transformers.Trainer(model=model, args=args, train_dataset=data,
                         callbacks=[callback]).train()
    record = callback.record
    assert record is not None and record.kind == "analyze" and record.status == "complete"
    assert callback.capture is not None and callback.capture.record_path is not None
    assert isinstance(load_record(callback.capture.record_path), AnalyzeRecord)
    report = record.reports[0]
    assert report.model is not None and report.model.steps == 3
    assert len(report.model.layers) == 2 and report.model.backward_attributed
    assert report.attnprof["capture"]["labels_cost_us_per_step"] > 0  # type: ignore[index]
    assert all("forward" not in m.__dict__ for m in model.modules())
