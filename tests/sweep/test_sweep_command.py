"""``attnprof sweep`` as a user meets it: the table, fits, record, CSV and plot from one
run; every mistake one line, exit 2, and no output file."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from synthetic_sweeps import row, sweep_of

from attnprof.analysis.scaling import analyse_sweep
from attnprof.cli.main import main
from attnprof.record.compare import VariantResult
from attnprof.record.sweep import SweepRecord
from attnprof.render.figures.sweep import scaling_plot
from attnprof.render.images import write_figure


def write_plot(record: SweepRecord, path: Path) -> None:
    """What ``sweep --plot PATH`` writes."""
    write_figure(scaling_plot(record), path)


TINY = ["--batch", "1", "--heads", "2", "--head-dim", "16", "--min-time", "0.01",
        "--rounds", "1"]


def test_one_run_writes_the_record_csv_and_plot(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = {k: tmp_path / f"sweep.{k}" for k in ("json", "csv", "svg")}
    argv = ["sweep", "--seq", "16..64x2", "--variants", "naive,sdpa", "--executor", "inline",
            *TINY, "--json", str(out["json"]), "--csv", str(out["csv"]),
            "--plot", str(out["svg"])]
    assert main(argv) == 0
    text = capsys.readouterr().out
    record = SweepRecord.load(out["json"])
    assert [p.coords["seq"] for p in record.ordered_points()] == [16, 32, 64]
    fit = record.fit("naive", "peak_memory_bytes", "seq")
    assert fit is not None and fit.r_squared is not None
    assert f"seq^{fit.exponent:.2f}" in text and "scaling: least squares" in text
    lines = list(csv.DictReader(out["csv"].open()))
    assert [(x["seq"], x["variant"]) for x in lines] == [
        (s, v) for s in ("16", "32", "64") for v in ("naive", "sdpa")]
    svg = out["svg"].read_text()
    assert f"naive: ∝ seq^{fit.exponent:.2f}" in svg and "peak memory per step" in svg


def test_plot_marks_failed_points_and_writes_png(records_by_kind: dict[str, object],
                                                 tmp_path: Path) -> None:
    record = records_by_kind["sweep"]
    assert isinstance(record, SweepRecord)
    write_plot(record, tmp_path / "plot.svg")
    svg = (tmp_path / "plot.svg").read_text()
    assert "not drawn: unsupported at seq=" in svg
    assert "mode=forward+backward" in svg
    write_plot(record, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["--seq", "0..8"], "--seq '0..8': a size must be a positive integer, got 0"),
    (["--seq", "0..8x2"], "--seq '0..8x2': a size must be a positive integer, got 0"),
    (["--seq", "8..2x1"], "a geometric factor must be a finite number above 1"),
    (["--seq", "1..1000000000+1"], "more than 512"),
    (["--seq", "64", "--batch", "1..65+1", "--heads", "1..64+1"], "the sweep has 4160"),
    (["--heads", "4,8", "--kv-heads", "3"], "sweep point heads=4: --kv-heads 3 does not divide"),
    (["--seq", "16,32", "--plot", "x.pdf"], "--plot 'x.pdf': write a .svg or .png file"),
    (["--dtype", "fp32,fp64", "--plot", "x.svg"], "--plot needs a swept size field"),
    (["--seq", "16,32", "--json", "no/such/dir/x.json"], "directory 'no/such/dir' does not"),
    (["--seq", "16,32", "--executor", "inline", "--point-timeout", "5"],
     "--point-timeout and --worker-memory need a worker"),
    (["--seq", "16,32", "--point-timeout", "never"], "--point-timeout 'never'"),
    (["--seq", "16,32", "--worker-memory=-1GiB"], "--worker-memory '-1GiB'"),
    (["--seq", "16,32", "--variants", "nope"], "unknown variant 'nope'"),
    (["--seq", "16,32", "--dtype", "fp8"], "unknown dtype 'fp8'"),
    (["--seq", "16,32", "--resume", "missing.json"], "cannot read record 'missing.json'"),
])
def test_mistakes_are_one_line_exit_2_and_write_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", *argv, "--json", "out.json"] if "--json" not in argv
                else ["sweep", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err, err
    assert not list(tmp_path.iterdir())


def test_resume_of_another_kind_of_record_is_refused(tmp_path: Path,
                                                     records_by_kind: dict[str, object],
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    compared = records_by_kind["compare"]
    path = tmp_path / "compare.json"
    compared.save(path)  # type: ignore[attr-defined]
    assert main(["sweep", "--resume", str(path)]) == 2
    assert "is a 'compare' record, not 'sweep'" in capsys.readouterr().err


def _marked(x: int) -> list[VariantResult]:
    """steady everywhere; noisy_once noisy at 32; nowhere out of memory everywhere;
    sometimes ran at 16, out of memory at 32, skipped at 64."""
    later = "oom" if x == 32 else "skipped"
    return [row("steady", x / 10), row("noisy_once", x / 8, spread=0.3 if x == 32 else 0.01),
            row("nowhere", None, status="oom"),
            row("sometimes", x / 5 if x == 16 else None, status="ok" if x == 16 else later)]


def test_the_plot_draws_no_wrong_output_and_names_what_was_not_measured(tmp_path: Path
                                                                         ) -> None:
    """A ``wrong`` row measured a latency, but the plot must not draw it as a result; an
    ``ok`` row without a peak memory is not drawn there either, and says why (it ran)."""
    def rows(x: int) -> list[VariantResult]:
        wrong = row("wrong_at_64", x / 4)
        if x == 64:
            wrong.status, wrong.reason = "wrong", "its output holds 12 NaN or infinite values"
        return [row("steady", x / 10), wrong, row("no_memory", x / 3, memory=None)]

    record = analyse_sweep(sweep_of([16, 32, 64], rows))
    write_plot(record, tmp_path / "plot.svg")
    svg = (tmp_path / "plot.svg").read_text()
    # Under each panel's title (latency, memory): said in words, never "did not run".
    wrong, unmeasured = ("wrong_at_64 not drawn: wrong at seq=64",
                         "no_memory not drawn: not measured at seq=16,32,64")
    assert svg.count(wrong) == 2 * svg.count(unmeasured) > 0  # latency and memory; memory
    assert "did not run" not in svg
    assert "no_memory: ran at no point" not in svg
    assert record.fit("wrong_at_64", "latency_ms", "seq").points == 2  # type: ignore[union-attr]


def test_the_table_marks_noisy_cells_and_counts_threads_in_words() -> None:
    from io import StringIO

    from rich.console import Console

    from attnprof.render.sweep_table import render_sweep

    out = StringIO()
    render_sweep(analyse_sweep(sweep_of([16, 32, 64], _marked)),
                 Console(file=out, width=200, color_system=None))
    text = out.getvalue()
    assert "4.000 ms noisy" in text and "(noisy: IQR/median > 10%)" in text
    assert "· 1 thread ·" in text and "1 threads" not in text
    assert "read with care" in text and "noisy at seq=32" in text


def test_the_plot_names_every_variant_and_what_did_not_run(tmp_path: Path) -> None:
    path = tmp_path / "plot.svg"
    write_plot(analyse_sweep(sweep_of([16, 32, 64], _marked)), path)
    svg = path.read_text()
    # A variant that ran nowhere still has its entry, and says where and how it failed.
    assert "nowhere: ran at no point" in svg
    assert "nowhere not drawn: oom at seq=16,32,64" in svg
    assert "sometimes not drawn: oom at seq=32; skipped at seq=64" in svg
    assert "hollow: noisy" in svg
    # No status words stacked on the axis: each failure is said once, in the key.
    assert ">oom<" not in svg and ">skipped<" not in svg


def test_a_sweep_with_a_row_it_could_not_measure_exits_3(tmp_path: Path) -> None:
    path = tmp_path / "raises.py"
    path.write_text("def raises(q, k, v, **kwargs):\n    raise ValueError('a bug')\n")
    out = tmp_path / "sweep.json"
    argv = ["sweep", "--seq", "16,32", "--variants", f"sdpa,{path}:raises", "--executor",
            "inline", *TINY, "--json", str(out)]
    assert main(argv) == 3
    record = SweepRecord.load(out)  # every result kept
    assert record.status == "complete"
    assert [[r.status for r in p.results] for p in record.ordered_points()] == [
        ["ok", "error"], ["ok", "error"]]
    assert main(["sweep", "--seq", "16,32", "--variants", "sdpa", "--executor", "inline",
                 *TINY]) == 0
