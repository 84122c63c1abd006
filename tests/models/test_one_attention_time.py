"""One trace, one attention time: ``model``'s record and ``analyze`` of the trace it wrote
report the same figure, and the report does not say two different things about it."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.formatting import format_us
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.model import ModelRecord

FLAGS = ["--layers", "2", "--hidden", "64", "--heads", "4", "--vocab", "128", "--seq", "32",
         "--min-time", "0.01", "--rounds", "1", "--trace-steps", "2", "--no-store"]


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_a_model_trace_gives_the_records_attention_time_in_analyze(
        attn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.json"
    main(["model", "gpt2", *FLAGS, "--attn", attn, "--phase", "train", "--json", str(out),
          "--trace", str(tmp_path / "traces")])
    run = ModelRecord.load(out).run(attn, "train")
    assert run.attribution is not None and run.trace is not None
    recorded = run.attribution.attention_time
    assert recorded is not None and recorded.forward_us > 0 and recorded.backward_us > 0
    assert recorded.found_by == (["name"] if attn == "sdpa" else ["pattern"])
    capsys.readouterr()

    analysed = tmp_path / "analysed.json"
    assert main(["analyze", run.trace, "--json", str(analysed), "--no-store"]) == 0
    text = capsys.readouterr().out
    (report,) = AnalyzeRecord.load(analysed).reports
    (region,) = report.regions
    assert region.attention is not None
    assert region.attention_us_per_forward == pytest.approx(recorded.per_step_us, rel=0.02)
    assert region.attention.forward_us == pytest.approx(recorded.forward_us, rel=0.02)
    assert region.attention.backward_us == pytest.approx(recorded.backward_us, rel=0.02)
    assert region.attention_share == pytest.approx(recorded.share, rel=0.02)
    # The report states one attention time: the region's line and the model's line say the
    # same figure; the modules' share (projections included) is named as such.
    figure = f"{format_us(recorded.per_step_us)} per step"
    assert f"attention: {figure}" in text
    assert f"attention time (the core, as analyze, diff and the ranks view report it): " \
           f"{figure}" in text
    assert "attention modules" in text and "\n  attention " not in text.replace(
        "\n  attention: ", "").replace("\n  attention modules", "").replace(
        "\n  attention time", "")
