"""``attnprof model`` as a user runs it: the tables, the files, the traces `analyze`
explains, and every mistake as one line, exit status 2 and no output file."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.model import ModelRecord


def finished_status(record: ModelRecord) -> int:
    """What a finished run exits with: 3 when a run's shares are marked unreliable (this
    machine's load can make every capture noisy), else 0."""
    return 3 if any(r.shares_unreliable for r in record.runs) else 0


TINY_FLAGS = ["--layers", "2", "--hidden", "32", "--heads", "4", "--vocab", "64", "--seq",
              "16", "--min-time", "0.01", "--rounds", "1", "--trace-steps", "1"]


def test_a_run_prints_the_table_and_writes_json_csv_and_traces(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, table = tmp_path / "run.json", tmp_path / "run.csv"
    code = main(["model", "llama", *TINY_FLAGS, "--kv-heads", "2", "--attn", "eager,sdpa",
                 "--phase", "prefill,decode", "--json", str(out), "--csv", str(table),
                 "--trace", str(tmp_path / "traces")])
    text = capsys.readouterr().out
    record = ModelRecord.load(out)
    assert code == finished_status(record)
    assert "attnprof model — llama (built-in" in text
    assert "LlamaAttention ×2" in text and "transformers attention interface" in text
    assert "sdpa · prefill — per layer" in text and "model.layers.1" in text
    assert "top component" in text and "KV cache in decode" in text
    assert "attention per layer against eager · prefill" in text
    assert [(r.implementation, r.phase) for r in record.runs] == [
        ("eager", "prefill"), ("eager", "decode"), ("sdpa", "prefill"), ("sdpa", "decode")]
    lines = list(csv.DictReader(table.open()))
    assert len(lines) == 8  # 4 runs × 2 layers
    assert {x["layer"] for x in lines} == {"model.layers.0", "model.layers.1"}
    assert all(float(x["core_cpu_us"]) > 0 for x in lines)
    # Measured on one intra-op thread (the CPU default, as compare), and put back after.
    assert record.settings.threads == 1 and record.environment.threads == 1
    trace = record.run("sdpa", "prefill").trace
    assert trace is not None and Path(trace).is_file()
    # The same attribution from the saved trace alone, without the run.
    assert main(["analyze", trace]) == 0
    explained = capsys.readouterr().out
    assert "attnprof::model/sdpa/prefill — per layer" in explained
    assert "model.layers.0" in explained and "sdpa (flash (CPU))" in explained


def test_hand_written_attention_is_found_by_name(factories: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "hand.json"
    args = ["model", f"{factories}:make", "--min-time", "0.01", "--rounds", "1",
            "--trace-steps", "1", "--phase", "prefill,train", "--json", str(out)]
    assert main(args) == 2
    assert "--attention-module" in capsys.readouterr().err
    code = main([*args, "--attention-module", "ScratchAttention"])
    assert code == finished_status(ModelRecord.load(out))
    text = capsys.readouterr().out
    assert "ScratchAttention ×2 (0.attn … 1.attn) — --attention-module" in text
    assert "eager (hand-written); core inferred" in text


def test_a_factory_returning_keyword_inputs_and_mha(factories: Path, tmp_path: Path) -> None:
    out = tmp_path / "mha.json"
    code = main(["model", f"{factories}:make_kwargs", "--min-time", "0.01", "--rounds", "1",
                 "--trace-steps", "1", "--attn", "sdpa-math", "--json", str(out)])
    assert code == finished_status(ModelRecord.load(out))
    run = ModelRecord.load(out).runs[0]
    assert run.status == "ok" and run.attribution is not None
    assert run.attribution.layers[0].actual == "sdpa (math)"


@pytest.mark.parametrize(("spec", "extra", "needle"), [
    ("gpt3", [], "unknown model 'gpt3'"),
    ("{f}:raises", [], "raised RuntimeError: weights file is corrupt"),
    ("{f}:exits", [], "called exit(3)"),
    ("{f}:wrong", [], "returned Linear; return a pair (model, inputs)"),
    ("{f}:not_a_module", [], "returned str as the model"),
    ("{f}:no_attention", [], "no attention module found"),
    ("{f}:missing", [], "has no attribute 'missing'"),
    ("nowhere/model.py:make", [], "does not exist"),
    ("{f}:make", ["--attention-module", "Nothing"], "matched no module"),
    (None, ["--model-path", "{tmp}"], "has no config.json"),
    (None, ["--model-path", "{tmp}/absent"], "is not a folder"),
    ("llama", ["--attn", "fast"], "--attn 'fast' is not an attention implementation"),
    ("llama", ["--phase", "serve"], "--phase 'serve' is not a phase"),
    ("llama", ["--device", "cuda:x"], "--device cuda:x"),
    ("llama", ["--seq", "-4"], "--seq must be a positive integer"),
    ("llama", ["--min-time", "nan"], "--min-time must be positive"),
    ("llama", ["--batch", "0"], "--batch must be a positive integer"),
    ("llama", ["--hidden", "65536", "--heads", "512", "--layers", "64"],
     "reduce --layers, --hidden, --vocab, --seq, --cache-len, --new-tokens or --batch"),
    ("llama", ["--seq", "100000", "--batch", "64"], "GiB"),
    ("gpt2", ["--seq", "5000"], "--seq 5000 exceeds the model's 1024 positions"),
    ("gpt2", ["--layers", "1000000000"], "reduce --layers"),
    ("gpt2", ["--hidden", str(2**40), "--heads", "16"], "reduce --layers, --hidden"),
])
def test_mistakes_are_one_line_exit_2_and_no_file(
        spec: str | None, extra: list[str], needle: str, factories: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "never.json"
    args = ["model", *([spec.format(f=factories)] if spec else []),
            *(a.format(tmp=tmp_path) for a in extra), "--json", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err
    assert not out.exists()


def test_without_transformers_a_builtin_says_what_to_install(tmp_path: Path) -> None:
    # transformers made unimportable in a fresh interpreter, as on a machine without it.
    code = ("import sys; sys.modules['transformers'] = None; "
            "from attnprof.cli.main import main; sys.exit(main(['model', 'gpt2']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2
    # From this checkout: the clone's own install command (attnprof.install).
    assert "pip install -c constraints.txt -e '.[hf]'" in done.stderr and done.stdout == ""


def test_a_4d_factory_input_is_shown_as_its_shape_without_tokens_per_second(
        factories: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "image.json"
    code = main(["model", f"{factories}:make_image", "--min-time", "0.01", "--rounds", "1",
                 "--trace-steps", "1", "--json", str(out)])
    text = capsys.readouterr().out
    assert "input 1 × 2 × 8 × 8" in text and "batch × seq" not in text
    record = ModelRecord.load(out)
    assert code == finished_status(record)
    assert record.model.input_shape == [1, 2, 8, 8] and record.model.seq is None
    (run,) = record.runs
    assert run.status == "ok" and run.tokens_per_s is None and run.tokens_per_step is None


def test_bert_attention_modules_are_listed_once_for_all_layers(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "bert", *TINY_FLAGS]) in (0, 3)  # 3: shares unreliable under load
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("attention:")]
    assert len(lines) == 1
    assert lines[0].startswith("attention: BertAttention ×2 (encoder.layer.0.attention … "
                               "encoder.layer.1.attention)")
