"""Every command's result is a record: ``check``, ``limits`` and ``recommend`` write theirs
(``--json``) and their reports (``--html``, ``--plots``); a budgets verdict is inside the
record it judged; ``attnprof report`` puts several records on one page."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.cli.main import main
from attnprof.record.check import CheckRecord
from attnprof.record.compare import CompareRecord
from attnprof.record.family import load_record
from attnprof.record.limits import LimitsRecord
from attnprof.record.sweep import RecommendRecord
from attnprof.render import RENDERERS

TINY = ["--batch", "1", "--heads", "2", "--head-dim", "16", "--device", "cpu"]


def _renders_everywhere(record: object) -> None:
    for name, renderer in RENDERERS.items():
        out = renderer().render(record)  # type: ignore[arg-type]
        assert out, name


def _reports(tmp_path: Path, name: str) -> list[str]:
    return ["--html", str(tmp_path / f"{name}.html"), "--plots", str(tmp_path / name)]


def _assert_reports(tmp_path: Path, name: str) -> None:
    html = (tmp_path / f"{name}.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and 'class="attnprof-record"' in html
    images = sorted(p.suffix for p in (tmp_path / name).iterdir())
    assert images and images.count(".png") == images.count(".svg")


def test_check_writes_its_record_with_the_verdict(records_by_kind: dict[str, object],
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    trace = records_by_kind["profile"].results[0].trace  # type: ignore[attr-defined]
    expect = tmp_path / "expect.toml"
    expect.write_text('title = "one holds, one does not"\n[per_forward]\n'
                      'kernels = { min = 1 }\n[[op]]\nmatch = "aten::softmax"\ncount = 9\n')
    out = tmp_path / "check.json"
    assert main(["check", "--expect", str(expect), trace, "--json", str(out),
                 *_reports(tmp_path, "check")]) == 1
    printed = capsys.readouterr().out
    record = load_record(out)
    assert isinstance(record, CheckRecord) and not record.ok
    assert [r.ok for r in record.rows] == [True, False]
    assert record.report is not None and record.target == trace
    assert "1 of 2 expectations did not hold" in printed
    _renders_everywhere(record)
    _assert_reports(tmp_path, "check")
    assert main(["show", str(out)]) == 0
    assert printed.startswith(capsys.readouterr().out)


def test_recommend_writes_a_recommend_record(records_by_kind: dict[str, object],
                                             tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.json"
    records_by_kind["sweep"].save(sweep)  # type: ignore[attr-defined]
    out = tmp_path / "rec.json"
    assert main(["recommend", "--from", str(sweep), "--max-latency", "1s", "--json",
                 str(out), *_reports(tmp_path, "rec")]) == 0
    record = load_record(out)
    assert isinstance(record, RecommendRecord) and record.recommendation is not None
    assert record.run_id == load_record(sweep).run_id  # the sweep it decided from
    _renders_everywhere(record)
    _assert_reports(tmp_path, "rec")
    again = tmp_path / "again.json"  # a recommend record is a sweep to recommend from
    assert main(["recommend", "--from", str(out), "--max-memory", "1GiB", "--json",
                 str(again)]) == 0
    assert load_record(again).recommendation.constraints.max_memory_bytes == 1 << 30  # type: ignore[union-attr]


def test_limits_writes_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "limits.json"
    assert main(["limits", "--variants", "naive", "--mode", "forward", "--memory-budget",
                 "1MiB", "--step", "64", "--max", "128", *TINY, "--json", str(out),
                 *_reports(tmp_path, "limits")]) == 0
    printed = capsys.readouterr().out
    record = load_record(out)
    assert isinstance(record, LimitsRecord) and record.budget_bytes == 1 << 20
    (ceiling,) = record.ceilings
    assert ceiling.variant == "naive" and ceiling.probes
    _renders_everywhere(record)
    _assert_reports(tmp_path, "limits")
    assert main(["show", str(out)]) == 0
    assert capsys.readouterr().out in printed


def test_the_budgets_verdict_is_in_the_compare_record(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    budgets = tmp_path / "budgets.toml"
    budgets.write_text('title = "too tight"\n[[budget]]\nvariant = "naive"\n'
                       'latency_ms = { max = 0.000001 }\n[[budget]]\nvariant = "nope"\n'
                       'latency_ms = { max = 1 }\n')
    out = tmp_path / "run.json"
    assert main(["compare", "--variants", "naive", "--seq", "32", *TINY, "--min-time", "0.01",
                 "--rounds", "1", "--budgets", str(budgets), "--json", str(out),
                 *_reports(tmp_path, "compare")]) == 1
    printed = capsys.readouterr().out
    record = load_record(out)
    assert isinstance(record, CompareRecord) and record.budgets is not None
    assert not record.budgets.ok and record.budgets.title == "too tight"
    assert [u.number for u in record.budgets.unmatched] == [2]
    assert "budget checks failed" in printed
    html = (tmp_path / "compare.html").read_text()
    assert 'data-table="r0-budgets"' in html and "budget checks did not hold" in html
    assert main(["show", str(out)]) == 0
    assert printed.startswith(capsys.readouterr().out)


def test_diff_writes_its_report(records_by_kind: dict[str, object], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """``diff`` makes a record too: its report and plots, and the page holds its rows."""
    paths = []
    for kind in ("compare-v1", "compare"):
        paths.append(str(tmp_path / f"{kind}.json"))
        records_by_kind[kind].save(paths[-1])  # type: ignore[attr-defined]
    out = tmp_path / "diff.json"
    assert main(["diff", *paths, "--json", str(out), *_reports(tmp_path, "diff")]) == 0
    printed = capsys.readouterr().out
    assert "HTML report written to" in printed
    _assert_reports(tmp_path, "diff")
    html = (tmp_path / "diff.html").read_text()
    assert 'data-kind="diff"' in html and 'data-table="r0-rows"' in html
    assert main(["diff", *paths, "--html", paths[0]]) == 2  # the input itself: refused
    assert "is the input" in capsys.readouterr().err


def test_report_puts_several_records_on_one_page(records_by_kind: dict[str, object],
                                                 tmp_path: Path) -> None:
    paths = []
    for kind in ("compare", "analyze", "limits"):
        path = tmp_path / f"{kind}.json"
        records_by_kind[kind].save(path)  # type: ignore[attr-defined]
        paths.append(str(path))
    page = tmp_path / "all.html"
    assert main(["report", *paths, "-o", str(page), "--plots", str(tmp_path / "plots")]) == 0
    html = page.read_text()
    assert [html.count(f'data-kind="{k}"') for k in ("compare", "analyze", "limits")] == [1, 1, 1]
    assert html.count('class="attnprof-record"') == 3
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "1-compare", "2-analyze", "3-limits"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["report", "nothing.json", "-o", "x.html"], "cannot read record 'nothing.json'"),
    (["report", "{rec}", "-o", "{rec}"], "is the input"),
    (["report", "{rec}", "-o", "no/such/dir/x.html"], "directory 'no/such/dir' does not"),
    (["compare", "--variants", "naive", "--json", "x.json", "--html", "x.json"],
     "is the same file as"),
    (["analyze", "{rec}", "--plots", "{rec}"], "--plots"),
    (["sweep", "--seq", "16,32", "--plot", "x.pdf"], "write a .svg or .png file"),
])
def test_report_mistakes_are_one_line_and_no_file(argv: list[str], needle: str,
                                                  records_by_kind: dict[str, object],
                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    rec = tmp_path / "rec.json"
    records_by_kind["compare"].save(rec)  # type: ignore[attr-defined]
    before = rec.read_bytes()
    assert main([a.format(rec=rec) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert rec.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.json"]
