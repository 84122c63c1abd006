"""The reading commands as the Python API (issue 32): ``attnprof.commands.<command>.run``
with its request gives the record the command line shows, quietly, on a real SQLite store
and the public traces; a mistake is one ``UsageError`` before any work."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from attnprof.commands import analyze, diff, env, report, runs, show
from attnprof.errors import UsageError
from attnprof.record.analyze import AnalyzeRecord
from attnprof.record.family import load_record
from attnprof.record.ranks import RanksRecord
from attnprof.store import open_store


@pytest.fixture()
def stored(tmp_path: Path, public_traces: Path) -> tuple[Path, str]:
    """A store holding the analysis of the CPU trace, labelled ``cpu``; the store's path
    and the run id."""
    record = analyze.run(analyze.request_for_traces([str(public_traces / "cpu_only.json.gz")]))
    path = tmp_path / "runs.db"
    with open_store(path, create=True) as store:
        saved = store.save(record, label="cpu")
    return path, saved.run_id


def test_analyze_is_quiet_and_checks_its_request_where_it_is_made(
        public_traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = [str(public_traces / name) for name in ("cpu_only.json.gz",
                                                     "triton_example.json.gz")]
    record = analyze.run(analyze.request_for_traces(traces))
    assert isinstance(record, AnalyzeRecord) and len(record.reports) == 2
    assert capsys.readouterr() == ("", "")  # no note, no bar: a program's output is its own
    with pytest.raises(UsageError, match=re.escape("--region '(' is not a regular")):
        analyze.AnalyzeRequest(paths=("x.json",), region="(")
    with pytest.raises(UsageError, match="--ray-address is for --executor ray"):
        analyze.request_for_traces(["no-such-file.json"], ray_address="host:1")


def test_analyze_of_a_rank_set_tells_its_progress(public_traces: Path) -> None:
    heard: list[tuple[int, int]] = []

    class Progress:
        def note(self, text: str) -> None:
            raise AssertionError(text)

        def rank_read(self, done: int, total: int, summary: object) -> None:
            heard.append((done, total))

    folder = public_traces / "sampled_ranks"
    record = analyze.run(analyze.request_for_traces([str(folder)], executor="inline"),
                         Progress())
    assert isinstance(record, RanksRecord)
    total = len(record.ranks)
    assert total >= 2 and heard == [(i, total) for i in range(1, total + 1)]


def test_analyze_of_only_unreadable_files_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("not json")
    with pytest.raises(UsageError, match="no trace could be read"):
        analyze.run(analyze.request_for_traces([str(tmp_path)]))


def test_runs_show_diff_report_on_a_real_store(stored: tuple[Path, str],
                                               tmp_path: Path) -> None:
    path, run_id = stored
    listing = runs.run(runs.RunsRequest(store=path))
    assert [r.run_id for r in listing.runs] == [run_id] and listing.store == str(path)
    assert runs.run(runs.RunsRequest(store=path, kind="compare")).runs == []
    shown = show.run(show.ShowRequest("cpu", store=path))
    assert shown.record.run_id == run_id and shown.run is not None
    assert shown.run.label == "cpu"
    file = tmp_path / "cpu.json"
    shown.record.save(file)
    from_file = show.run(show.ShowRequest(str(file), store=path))
    assert from_file.run is None and from_file.record.run_id == run_id
    # A stored run against the same record in a file: two records, nothing changed.
    changed = diff.run(diff.DiffRequest(old="cpu", new=str(file), store=path))
    assert changed.kind == "diff" and changed.old.run_id == changed.new.run_id == run_id
    # Two analyses: nothing a gate could judge, refused before anything is written.
    with pytest.raises(UsageError, match="--fail-on-regression judged nothing"):
        diff.run(diff.DiffRequest(old="cpu", new=str(file), store=path,
                                  fail_on_regression=5.0))
    page = tmp_path / "report.html"
    records = report.run(report.ReportRequest(records=(str(file),), output=page))
    assert [r.run_id for r in records] == [run_id]
    assert page.read_text().count(run_id) >= 1
    removed = runs.run(runs.RunsRequest(store=path, remove=run_id))
    assert removed.removed and [r.run_id for r in removed.runs] == [run_id]
    assert runs.run(runs.RunsRequest(store=path)).runs == []
    assert load_record(file).run_id == run_id  # the file is not the store's


@pytest.mark.parametrize(("request_", "message"), [
    (runs.RunsRequest(limit=-1), "--limit must be 0 (all) or a positive integer"),
    (runs.RunsRequest(since="yesterday-ish"), "--since"),
    (show.ShowRequest("no-such-run"), "no-such-run"),
    (diff.DiffRequest(old="", new="x"), "an empty name to diff"),
    (env.EnvRequest(dtypes=("float7",)), "float7"),
    (env.EnvRequest(threads="many"), "--threads must be a positive number"),
])
def test_a_mistake_is_one_usage_error_and_nothing_is_made(
        tmp_path: Path, request_: Any, message: str) -> None:
    store = tmp_path / "never-made.db"
    command = {runs.RunsRequest: runs, show.ShowRequest: show, diff.DiffRequest: diff,
               env.EnvRequest: env}[type(request_)]
    with pytest.raises(UsageError, match=re.escape(message)):
        command.run(dataclasses.replace(request_, store=store))
    assert not store.exists()
