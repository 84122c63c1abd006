"""A trace attnprof captures is valid JSON whatever the names in it: a user variant whose
file path holds a quote, a backslash, a newline, a control or a bidi character, and whose
``record_function`` label is ``my "fast" attention`` (kineto writes both unescaped). The
run completes, its record is complete, the variants after it run, and each written trace
loads with ``json`` and with ``attnprof analyze``."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.knowledge.annotations import REGION_PREFIX
from attnprof.record.compare import RunRecord

LABEL = 'my "fast" attention'
#: Kineto writes a \\ as / and leaves the quotes unescaped: repaired too.
SLASH = 'back\\slash "q"'
#: A label kineto cannot write at all (it writes "unknown"): a newline, controls, bidi.
ODD = 'new\nline\t\x01\x1b[31m \u202eRTL'
VARIANT = f'''
import torch
import torch.nn.functional as F


def attn(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    with torch.profiler.record_function({LABEL!r}), \\
            torch.profiler.record_function({SLASH!r}), torch.profiler.record_function({ODD!r}):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                              is_causal=is_causal, scale=scale,
                                              enable_gqa=enable_gqa)
'''
SMALL = ["--batch", "1", "--heads", "2", "--kv-heads", "2", "--seq", "32", "--head-dim", "16",
         "--min-time", "0.01"]
#: Folder names that kineto cannot write as they are: a quote, a backslash, a newline, an
#: ESC, a bidi override, non-ASCII letters, and a long name.
FOLDERS = {"quote": 'my "fast"', "mixed": 'b\\s\nl\x1b[31m\u202eé' + "L" * 150}


def user_variant(tmp_path: Path, folder: str) -> str:
    where = tmp_path / folder
    where.mkdir()
    (where / "attn.py").write_text(VARIANT)
    return f"{where / 'attn.py'}:attn"


def check_trace(trace: str, variant: str, tmp_path: Path) -> None:
    """The trace is JSON, its attnprof block names the variant exactly, its region is
    attnprof's, the user's label is there, and ``attnprof analyze`` reads it."""
    data = json.loads(gzip.decompress(Path(trace).read_bytes()))
    assert data["attnprof"]["variant"] == variant
    names = {e.get("name") for e in data["traceEvents"]}
    assert data["attnprof"]["region"] in names
    assert data["attnprof"]["region"].startswith(REGION_PREFIX)
    if variant.endswith("attn.py:attn"):  # kineto drops \n and writes \ as /, keeps quotes
        assert {LABEL, 'back/slash "q"', "unknown"} <= names
    out = tmp_path / f"analysis-{abs(hash(trace))}.json"
    assert main(["analyze", trace, "--json", str(out), "--no-store"]) == 0
    assert json.loads(out.read_text())["status"] == "complete"


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_profile_of_a_variant_with_quotes_keeps_the_run(
        folder: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    variant = user_variant(tmp_path, FOLDERS[folder])
    record_path = tmp_path / "run.json"
    code = main(["profile", variant, "sdpa-math", *SMALL, "--steps", "1",
                 "--out", str(tmp_path / "traces"), "--json", str(record_path), "--no-store"])
    assert code == 0, capsys.readouterr().err
    record = RunRecord.load(record_path)
    assert record.status == "complete"
    assert [r.variant for r in record.results] == [variant, "sdpa-math"]  # the later one ran
    for row in record.results:
        assert row.status == "ok" and row.trace is not None and row.analysis is not None
        check_trace(row.trace, row.variant, tmp_path)
    # The variant's own region is found (kineto would have written a non-ASCII name as
    # "unknown"): one forward per step, with the user's label inside it.
    ours = record.results[0].analysis
    assert ours is not None and ours.regions[0].name.startswith(REGION_PREFIX)


def test_compare_trace_of_a_quoted_variant_keeps_the_run(tmp_path: Path) -> None:
    variant = user_variant(tmp_path, FOLDERS["quote"])
    record_path = tmp_path / "run.json"
    code = main(["compare", "--variants", f"{variant},naive", *SMALL, "--trace",
                 str(tmp_path / "traces"), "--trace-steps", "1", "--json", str(record_path),
                 "--no-store"])
    assert code == 0
    record = RunRecord.load(record_path)
    assert record.status == "complete" and [r.variant for r in record.results] == [variant,
                                                                                   "naive"]
    for row in record.results:
        assert row.trace is not None and row.analysis is not None
        check_trace(row.trace, row.variant, tmp_path)


def test_a_variant_named_in_another_encoding_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / os.fsdecode(b"latin1-caf\xe9")
    folder.mkdir()
    (folder / "attn.py").write_text(VARIANT)
    record_path = tmp_path / "run.json"
    code = main(["profile", f"{folder / 'attn.py'}:attn", *SMALL, "--steps", "1",
                 "--out", str(tmp_path / "traces"), "--json", str(record_path), "--no-store"])
    assert code == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and "rename it" in err and len(err.strip().splitlines()) == 1
    assert not record_path.exists()


def test_a_trace_that_stays_malformed_is_refused() -> None:
    from attnprof.measure.trace_export import TraceExportError, checked_json

    # What kineto writes for a quoted name is repaired; text that is no JSON at all is not.
    kineto = (b'{\n  "traceEvents": [\n  {\n    "name": "my "fast" attention",\n'
              b'    "ph": "X"\n  }\n]}')
    assert json.loads(checked_json(kineto))["traceEvents"][0]["name"] == 'my "fast" attention'
    with pytest.raises(TraceExportError, match="not JSON"):
        checked_json(b'{\n  "traceEvents": [\n  {\n    "name": "cut')


BREAKS_THE_FOLDER = '''
import os
import shutil

import torch
import torch.nn.functional as F

TRACES = {traces!r}


def attn(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    if torch.autograd.profiler._is_profiler_enabled and os.path.isdir(TRACES):
        shutil.rmtree(TRACES)  # the trace folder becomes a file while it is traced
        open(TRACES, "w").close()
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                          scale=scale, enable_gqa=enable_gqa)
'''


def test_a_trace_that_cannot_be_written_keeps_the_row_with_a_note(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    (tmp_path / "breaks.py").write_text(BREAKS_THE_FOLDER.format(traces=str(traces)))
    variant, record_path = f"{tmp_path / 'breaks.py'}:attn", tmp_path / "run.json"
    code = main(["profile", variant, "sdpa-math", *SMALL, "--steps", "1", "--out",
                 str(traces), "--json", str(record_path), "--no-store"])
    assert code == 0
    record = RunRecord.load(record_path)
    assert record.status == "complete"
    for row in record.results:  # both measured; neither has a trace, each says why
        assert row.status == "ok" and row.latency_ms is not None and row.trace is None
        assert any(n.startswith("trace not written: FileExistsError") for n in row.notes)
