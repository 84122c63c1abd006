"""analyze output: names printed verbatim (never rich markup), user-chosen regions."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main


def test_bracketed_annotation_names_survive_rendering(
        public_traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The AlexNet trace annotates steps as "[param|pytorch.model.alex_net|0|0|0|...]",
    # which rich would swallow as a style tag.
    trace = public_traces / "a100_alexnet_inference.json.gz"
    assert main(["analyze", str(trace), "--top", "50"]) == 0
    out = capsys.readouterr().out
    assert "[param|" in out


def test_bracketed_user_variant_name_in_the_table(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "[bold]"
    folder.mkdir()
    (folder / "attn.py").write_text(
        "import torch.nn.functional as F\n"
        "def fn(q, k, v, **kw):\n    return F.scaled_dot_product_attention(q, k, v, **kw)\n")
    spec = f"{folder / 'attn.py'}:fn"
    assert main(["compare", "--variants", spec, "--batch", "1", "--heads", "2", "--seq", "16",
                 "--head-dim", "8", "--min-time", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "[bold]" in out.replace("\n", "").replace("│", "").replace(" ", "")


def test_region_pattern_picks_user_annotations(public_traces: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    trace = public_traces / "a100_alexnet_inference.json.gz"
    assert main(["analyze", str(trace), "--region", r"measure\|forward"]) == 0
    assert "[param|pytorch.model.alex_net|0|0|0|measure|forward] — 2 forwards" in \
        capsys.readouterr().out


@pytest.mark.parametrize(("pattern", "says"), [("nope", "matches no annotation"),
                                               ("(", "is not a regular expression")])
def test_bad_region_pattern_is_a_usage_error(public_traces: Path, pattern: str, says: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    trace = public_traces / "a100_alexnet_inference.json.gz"
    assert main(["analyze", str(trace), "--region", pattern]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
