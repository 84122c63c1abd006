"""A program fills a request wrongly as a careless caller would: one string where a list
of names goes is one name (not its letters), and any other wrong type or an unknown
workload field is one UsageError naming the field, when the request is made."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnprof
from attnprof.commands import analyze
from attnprof.errors import UsageError


@pytest.mark.parametrize(("make", "field"), [
    (lambda v: attnprof.CompareRequest(variants=v), "variants"),
    (lambda v: attnprof.ProfileRequest(variants=v), "variants"),
    (lambda v: attnprof.LimitsRequest(variants=v), "variants"),
    (lambda v: attnprof.ProjectRequest(target="run.json", to=v), "to"),
    (lambda v: attnprof.ReportRequest(records=v, output="report.html"), "records"),
])
def test_one_string_is_one_name_and_a_wrong_type_is_one_line(make: object, field: str) -> None:
    request = make("sdpa")  # type: ignore[operator]
    assert getattr(request, field) == ("sdpa",)
    assert getattr(make(["naive", "sdpa"]), field) == ("naive", "sdpa")  # type: ignore[operator]
    for wrong in (3, None, [1, 2], b"sdpa"):
        with pytest.raises(UsageError, match=f"^{field} must be a list of strings"):
            make(wrong)  # type: ignore[operator]


@pytest.mark.parametrize("make", [attnprof.CompareRequest, attnprof.ProfileRequest,
                                  attnprof.CheckRequest, attnprof.LimitsRequest])
def test_an_unknown_workload_field_names_the_known_ones(make: object) -> None:
    extra: dict[str, object] = ({"expect": "e.toml", "target": "t.json"}
                                if make is attnprof.CheckRequest else
                                {"variants": ("sdpa",)}
                                if make in (attnprof.ProfileRequest, attnprof.LimitsRequest)
                                else {})
    with pytest.raises(UsageError, match="workload field 'sequence' is not one of the "
                                         "workload's; give some of: batch, heads"):
        make(workload={"sequence": 5}, **extra)  # type: ignore[operator]
    with pytest.raises(UsageError, match="workload must be a mapping"):
        make(workload=[("seq", 5)], **extra)  # type: ignore[operator]


def test_analyze_takes_one_trace_as_a_string(public_traces: Path) -> None:
    record = analyze.run(attnprof.AnalyzeRequest(paths=str(public_traces / "cpu_only.json.gz")))
    assert [Path(r.source).name for r in record.reports] == ["cpu_only.json.gz"]
