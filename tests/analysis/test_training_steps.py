"""Training traces are read as steps: phases, attention in each, and the diff's first line
(issue 28). The traces are real: a GPT-2-shaped transformers model (2 layers, hidden 64,
seq 32 and 64, SDPA) trained with AdamW and cross-entropy, profiled the usual way
(``torch.profiler.schedule``, chrome trace export) by ``training_loop.py``; and an
inference loop for the forwards that stay forwards. Truths come from the trace's events.
"""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from attnprof.analysis.analyze import analyze_trace
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.family import load_record
from attnprof.record.trace_report import PHASES, RegionReport, TraceReport
from attnprof.render.trace_report import render_trace_report
from attnprof.trace import load_trace

LOOP = Path(__file__).with_name("training_loop.py")
OLD_ANALYZE = Path(__file__).parents[1] / "fixtures" / "records" / "analyze-v1.json"


@pytest.fixture(scope="session")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("training")
    for out, flags in (("{seq}.json", ["--model", "gpt2", "--seq", "32", "64"]),
                       ("inference.json", ["--inference"])):
        subprocess.run([sys.executable, str(LOOP), str(folder / out), *flags],
                       check=True, capture_output=True, text=True, timeout=300)
    return {"seq32": folder / "32.json", "seq64": folder / "64.json",
            "inference": folder / "inference.json"}


@pytest.fixture(scope="session")
def reports(traces: dict[str, Path]) -> dict[str, TraceReport]:
    return {name: analyze_trace(load_trace(str(path))) for name, path in traces.items()}


def _steps(report: TraceReport) -> RegionReport:
    (region,) = report.regions
    assert region.name == "ProfilerStep" and region.instances == 3
    return region


def _events(path: Path) -> list[dict[str, Any]]:
    text = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    # Times as written (decimal µs, to the ns), not as floats: a float holds an epoch-scale
    # stamp to about 0.2 ns, and a phase sums a dozen of them per step, so a float truth
    # drifted past the 1 ns the comparison allows (once in a suite run, 1.02 ns).
    events = json.loads(text, parse_float=Decimal)["traceEvents"]
    return [e for e in events if e.get("ph") == "X"]


def _truth(path: Path) -> dict[str, float]:
    """Per step, from the trace's events: data (the DataLoader's fetch), forward (the
    fetch's end to the loss), loss, backward
    (the loss's end to the autograd engine's last function), optimizer (AdamW's step to its
    zero_grad) and the rest; and SDPA's forward and backward ops' time. A step (and a
    label in it) left open when profiling stopped ends with the trace's last op, as
    analyze reads it."""
    events = _events(path)
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    horizon = max(e["ts"] + e["dur"] for e in events
                  if e.get("cat") not in ("user_annotation", "gpu_user_annotation", "Trace"))
    sums = dict.fromkeys(("data", "forward", "loss", "backward", "optimizer", "other",
                          "sdpa", "sdpa_backward"), Decimal(0))
    for step in steps:
        lo, hi = step["ts"], min(step["ts"] + step["dur"], horizon)
        inside = [e for e in events if lo <= e["ts"] < hi and e is not step]

        def named(prefix: str, inside: list[dict[str, Any]] = inside) -> list[dict[str, Any]]:
            return sorted((e for e in inside if e["name"].startswith(prefix)),
                          key=lambda e: e["ts"])

        (loss,) = named("aten::cross_entropy_loss")
        (fetch,) = named("enumerate(DataLoader)#")
        backward = named("autograd::engine::evaluate_function: ")
        optimizer = named("Optimizer.")
        end = {id(e): min(e["ts"] + e["dur"], hi) for e in inside}
        sums["data"] += end[id(fetch)] - fetch["ts"]
        sums["forward"] += loss["ts"] - end[id(fetch)]
        sums["loss"] += loss["dur"]
        last_backward = max(end[id(e)] for e in backward)
        sums["backward"] += last_backward - end[id(loss)]
        sums["optimizer"] += max(end[id(e)] for e in optimizer) - optimizer[0]["ts"]
        sums["other"] += (fetch["ts"] - lo) + (optimizer[0]["ts"] - last_backward) + (
            hi - max(end[id(e)] for e in optimizer))
        sums["sdpa"] += sum(e["dur"] for e in named("aten::scaled_dot_product_attention"))
        sums["sdpa_backward"] += sum(e["dur"] for e in named(
            "autograd::engine::evaluate_function: ScaledDotProduct"))
    return {k: float(v / len(steps)) for k, v in sums.items()}


def test_a_training_trace_is_steps_whose_phases_add_up(reports: dict[str, TraceReport]
                                                       ) -> None:
    region = _steps(reports["seq32"])
    assert region.unit == "step" and region.is_training
    names = [p.name for p in region.phases]
    assert {"data", "forward", "loss", "backward", "optimizer"} <= set(names)
    assert names == [p for p in PHASES if p in names]  # in the order a step runs them
    step = sum(region.instance_us) / region.instances
    assert math.isclose(sum(p.us for p in region.phases), step, rel_tol=1e-9)
    assert all(0.0 <= p.share <= 1.0 for p in region.phases)
    assert math.isclose(sum(p.share for p in region.phases), 1.0, rel_tol=1e-9)
    # Attention's parts are the step's attention; each share is of its phase's work.
    assert math.isclose(sum(p.attention_us for p in region.phases),
                        region.attention_us_per_forward, rel_tol=1e-9)
    for p in region.phases:
        assert p.attention_share is None or 0.0 <= p.attention_share <= 1.0
    assert region.attention_share is not None
    work = sum(p.work_us for p in region.phases)
    assert math.isclose(region.attention_us_per_forward / work, region.attention_share,
                        rel_tol=1e-9)


def test_phases_are_those_the_trace_events_show(traces: dict[str, Path],
                                                reports: dict[str, TraceReport]) -> None:
    truth = _truth(traces["seq32"])
    phases = {p.name: p for p in _steps(reports["seq32"]).phases}
    for name in ("data", "forward", "loss", "backward", "optimizer", "other"):
        assert math.isclose(phases[name].us, truth[name], rel_tol=1e-6, abs_tol=1e-3), name
    # Attention's forward work is inside SDPA's forward ops, and most of their time (the
    # flash kernel's op does the work); its backward work inside SDPA's backward functions.
    forward = phases["forward"].attention_us
    assert 0.5 * truth["sdpa"] <= forward <= truth["sdpa"] * (1 + 1e-9)
    assert phases["backward"].attention_us <= truth["sdpa_backward"] * (1 + 1e-9)
    assert phases["optimizer"].attention_us == 0.0 and phases["loss"].attention_us == 0.0


def test_training_says_steps_and_shows_the_split(reports: dict[str, TraceReport]) -> None:
    console = Console(width=200, record=True, color_system=None)
    render_trace_report(reports["seq32"], console)
    text = console.export_text()
    region = _steps(reports["seq32"])
    assert f"ProfilerStep — 3 steps, {region.kernels_per_forward:g} compute ops per step" in text
    assert "forwards" not in text and "phases of a step" in text
    attention = next(line for line in text.splitlines() if line.strip().startswith("attention:"))
    assert " per step, " in attention and "(forward " in attention and ", backward " in attention


def test_html_and_csv_show_the_phases(reports: dict[str, TraceReport]) -> None:
    from attnprof.render import CsvRenderer, HtmlRenderer

    record = AnalyzeRecord(reports=[reports["seq32"]], status="complete")
    page = HtmlRenderer().render(record)
    assert "phases of a step" in page and "backward" in page
    csv = str(CsvRenderer().render(record))
    header, line = csv.splitlines()[:2]
    assert "forward_attention_us" in header.split(",") and ",step," in line


def test_inference_keeps_forwards(reports: dict[str, TraceReport]) -> None:
    region = _steps(reports["inference"])
    assert region.unit == "forward" and region.phases == []
    console = Console(width=200, record=True, color_system=None)
    render_trace_report(reports["inference"], console)
    text = console.export_text()
    assert "ProfilerStep — 3 forwards" in text and "phases of a step" not in text


def test_the_record_keeps_the_phases_and_old_records_load(reports: dict[str, TraceReport],
                                                          tmp_path: Path) -> None:
    path = tmp_path / "analysis.json"
    AnalyzeRecord(reports=[reports["seq32"]], status="complete").save(str(path))
    loaded = load_record(path)
    assert isinstance(loaded, AnalyzeRecord)
    assert loaded.reports[0].regions[0].phases == reports["seq32"].regions[0].phases
    assert loaded.reports[0].contention == reports["seq32"].contention
    old = load_record(OLD_ANALYZE)  # written before steps had phases
    assert isinstance(old, AnalyzeRecord)
    assert all(r.phases == [] and r.unit == "forward" for t in old.reports for r in t.regions)
    assert all(t.contention is None for t in old.reports)


def test_diff_of_two_training_traces_says_attention_per_step_first(
        traces: dict[str, Path], reports: dict[str, TraceReport], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "attnprof", "diff", str(traces["seq32"]),
                           str(traces["seq64"])], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rule = next(i for i, line in enumerate(lines) if "→" in line and "─" in line)
    old, new = _steps(reports["seq32"]), _steps(reports["seq64"])
    a, b = ({p.name: p.attention_us for p in r.phases} for r in (old, new))

    def ms(us: float) -> str:
        return f"{us / 1e3:.2f}"

    assert lines[rule + 1] == (
        f"attention {ms(old.attention_us_per_forward)} → {ms(new.attention_us_per_forward)} "
        f"ms per step (forward {ms(a['forward'])} → {ms(b['forward'])}, "
        f"backward {ms(a['backward'])} → {ms(b['backward'])})")
    assert lines[rule + 2].startswith("ProfilerStep: compute ops per step ")


def test_public_training_traces_are_steps_and_inference_ones_are_not(
        public_traces: Path) -> None:
    seen = {}
    for path in sorted(public_traces.glob("*.json.gz")):
        report = analyze_trace(load_trace(str(path)))
        for region in report.regions:
            seen[path.name] = region.unit
            if not region.phases:
                continue
            step = sum(region.instance_us) / region.instances
            assert math.isclose(sum(p.us for p in region.phases), step, rel_tol=1e-9)
            assert all(0.0 <= p.share <= 1.0 for p in region.phases)
            assert "backward" in {p.name for p in region.phases}
    assert seen["a100_training_rank0.json.gz"] == "step"
    assert seen["v100_training_large.json.gz"] == "step"
    assert seen["a100_alexnet_inference.json.gz"] == "forward"
