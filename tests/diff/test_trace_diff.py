"""Trace diffs on real traces: attnprof's own capture of naive against naive-inplace shows
exactly the one copy per forward that went away, and HTA's public trace-diff pair lists
the changed kernels and agrees with HTA's TraceDiff on the ops and kernels added and
removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = ["--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "16",
         "--min-time", "0.01"]


def attnprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attnprof", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("captures")
    done = attnprof("compare", "--variants", "naive,naive-inplace", *SMALL, "--trace",
                    "traces", "--json", "run.json", "--no-store", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def _only_changes(diff: dict) -> tuple[list[tuple[str, str, float, float]], dict]:
    (trace,) = diff["traces"]
    (region,) = trace["regions"]
    kernels = [(k["name"], k["state"], k["old_per_forward"], k["new_per_forward"])
               for k in region["kernels"] if k["state"] != "same"]
    return kernels, trace


def test_naive_against_inplace_is_one_copy_fewer(captures: Path) -> None:
    traces = sorted((captures / "traces").iterdir())
    naive = next(p for p in traces if p.name.startswith("naive."))
    inplace = next(p for p in traces if p.name.startswith("naive-inplace."))
    done = attnprof("diff", str(naive), str(inplace), "--json", "diff.json", cwd=captures)
    assert done.returncode == 0, done.stderr
    kernels, trace = _only_changes(json.loads((captures / "diff.json").read_text()))
    # The one compute op per forward that went away, and nothing else changed.
    assert kernels == [("aten::copy_", "removed", 1.0, 0.0)]
    region = trace["regions"][0]
    assert region["old_kernels_per_forward"] - region["new_kernels_per_forward"] == 1
    assert [f.split(":")[0] for f in trace["findings_gone"]] == ["hidden-copy"]
    assert trace["findings_appeared"] == []
    assert "aten::copy_" in done.stdout and "finding gone: hidden-copy" in done.stdout


def test_two_capture_folders_pair_by_file(captures: Path, tmp_path: Path) -> None:
    other = tmp_path / "again"
    done = attnprof("compare", "--variants", "naive,naive-inplace", *SMALL, "--trace",
                    str(other), "--no-store", cwd=captures)
    assert done.returncode == 0, done.stderr
    done = attnprof("diff", "traces", str(other), "--json", "folders.json", cwd=captures)
    assert done.returncode == 0, done.stderr
    diff = json.loads((captures / "folders.json").read_text())
    assert sorted(t["name"] for t in diff["traces"]) == sorted(
        p.name for p in (captures / "traces").iterdir())
    for trace in diff["traces"]:  # the same code traced twice: no kernel changed count
        for region in trace["regions"]:
            assert all(k["state"] == "same" for k in region["kernels"])


def test_profile_records_diff_their_traces(captures: Path) -> None:
    done = attnprof("diff", "run.json", "run.json", "--json", "self.json", cwd=captures)
    assert done.returncode == 0, done.stderr
    diff = json.loads((captures / "self.json").read_text())
    assert [t["name"] for t in diff["traces"]] == ["naive", "naive-inplace"]


def test_a_record_against_a_trace_is_refused(captures: Path) -> None:
    trace = next((captures / "traces").iterdir())
    done = attnprof("diff", "run.json", str(trace), cwd=captures)
    assert done.returncode == 2
    assert "diff two records or two traces" in done.stderr


@pytest.fixture(scope="module")
def public_diff(public_traces: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("public") / "diff.json"
    done = attnprof("diff", str(public_traces / "a100_trace_control.json.gz"),
                    str(public_traces / "v100_trace_diff_test.json.gz"), "--json", str(out),
                    "--top", "5", cwd=out.parent)
    assert done.returncode == 0, done.stderr
    assert "kernels that changed, per forward" in done.stdout
    assert "Tesla V100-SXM2-16GB" in done.stdout  # the device change, listed first
    return json.loads(out.read_text())


def test_public_pair_lists_changed_kernels(public_diff: dict) -> None:
    (trace,) = public_diff["traces"]
    (region,) = trace["regions"]
    assert region["old_name"] == region["new_name"] == "ProfilerStep"
    changed = [k for k in region["kernels"] if k["state"] != "same"]
    assert len(changed) > 50
    assert any(k["name"].startswith("volta_sgemm") and k["state"] == "added" for k in changed)
    assert any(k["name"].startswith("ampere_sgemm") and k["state"] == "removed"
               for k in changed)
    launches = {k["name"]: k["state"] for k in region["launches"]}
    assert launches["cudaGraphLaunch"] == "added"


def _hta_ops_diff(public_traces: Path, tmp_path: Path) -> tuple[dict, dict[str, str]]:
    """HTA's ops_diff of the pair (its defaults: the first iteration of the first rank,
    CPU ops and GPU kernels) and each name's trace category."""
    hta_diff = pytest.importorskip("hta.trace_diff")
    dirs = []
    for name in ("a100_trace_control", "v100_trace_diff_test"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.json.gz").symlink_to(public_traces / f"{name}.json.gz")
        dirs.append(str(folder))
    control = hta_diff.LabeledTrace("control", trace_dir=dirs[0])
    test = hta_diff.LabeledTrace("test", trace_dir=dirs[1])
    categories: dict[str, str] = {}
    for labelled in (control, test):
        summary = labelled.get_ops_summary(labelled.extract_ops())
        categories.update(zip(summary["name"], summary["cat"], strict=True))
    return hta_diff.TraceDiff.ops_diff(control, test), categories


@pytest.mark.slow
def test_public_pair_agrees_with_hta(public_traces: Path, public_diff: dict,
                                     tmp_path: Path) -> None:
    ops_diff, categories = _hta_ops_diff(public_traces, tmp_path)
    (region,) = public_diff["traces"][0]["regions"]
    ours = {state: {c["name"] for c in [*region["kernels"], *region["ops"]]
                    if c["state"] == state} for state in ("added", "removed")}
    # HTA counts every runtime call too; attnprof diffs the ones that launched work.
    launches = {c["name"] for c in region["launches"]}
    for theirs, state in ((ops_diff["added"], "added"), (ops_diff["deleted"], "removed")):
        modelled = {n for n in theirs if categories.get(n) != "cuda_runtime"}
        assert ours[state] == modelled
        runtime = {n for n in theirs if categories.get(n) == "cuda_runtime"}
        launched = {c["name"] for c in region["launches"] if c["state"] == state}
        assert launched == runtime & launches
