"""Small figures that said something else than they meant (issue 31, item 6): each checked
through the real renderer, parser or record."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from attnprof.cli.main import build_parser
from attnprof.record.family import load_record

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and command in a.choices)
    return " ".join(sub.choices[command].format_help().split())


def test_kv_heads_help_states_the_default() -> None:
    for command in ("compare", "profile", "check", "limits"):
        text = _help(command)
        assert "(default: heads/4 when 4 divides heads" in text, command
        assert "(default: heads)" not in text


def test_profile_output_is_headed_profile() -> None:
    import msgspec

    from attnprof.record.compare import ProfileRecord
    from attnprof.render import TerminalRenderer

    # What attnprof profile saves: a comparison of kind "profile".
    compared = load_record(RECORDS / "compare-v2.json")
    profile = ProfileRecord(**msgspec.structs.asdict(compared))
    assert profile.kind == "profile"
    text = TerminalRenderer(width=200).render(profile)
    assert "attnprof profile —" in text and "attnprof compare —" not in text


def test_runs_describes_a_limits_run_in_human_units() -> None:
    from attnprof.record.limits import LimitsRecord
    from attnprof.store.summary import summarize_record

    compared = load_record(RECORDS / "compare-v2.json")
    record = LimitsRecord(environment=compared.environment,  # type: ignore[attr-defined]
                          base=compared.workload, field="seq",  # type: ignore[attr-defined]
                          budget_bytes=268435456)
    summary = summarize_record(record).summary
    assert "within 256.0 MiB from" in summary and "268435456" not in summary


def test_sweep_does_not_offer_to_keep_a_record_the_store_keeps(tmp_path: Path) -> None:
    from attnprof.cli.sweeping import finish_outputs

    record = load_record(RECORDS / "sweep-v2.json")
    for flags, said in ((["--store", str(tmp_path / "runs.db")], "keep a record file that "
                         "resumes an interrupted sweep"),
                        (["--no-store"], "to keep the record (and to resume")):
        args = build_parser().parse_args(["sweep", "--seq", "32,64", *flags])
        out = io.StringIO()
        finish_outputs(args, record, Console(file=out, width=200))  # type: ignore[arg-type]
        assert said in out.getvalue(), out.getvalue()


def test_html_analyze_page_shows_self_time_per_forward(public_traces: Path) -> None:
    from attnprof.analysis.analyze import analyze_files
    from attnprof.formatting import format_us
    from attnprof.render import HtmlRenderer

    record = analyze_files([str(public_traces / "a100_training_rank0.json.gz")])
    region = next(r for r in record.reports[0].regions if r.instances > 1 and r.ops)
    op = max(region.ops, key=lambda o: o.self_us)
    html = HtmlRenderer().render(record)
    assert "self / forward" in html
    per_forward, summed = format_us(op.self_us / region.instances), format_us(op.self_us)
    assert per_forward != summed
    assert f">{per_forward}<" in html
