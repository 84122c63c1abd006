"""``attnprof.commands.compare.run``: the compare command as a Python call — quiet, one
request in, the record out, saved through the one save path; the workload prepared and the
settings built once on the way (issue 32: ``prepare()`` and ``settings_from_args()`` ran
twice each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprof.commands import compare
from attnprof.commands.compare import CompareRequest, Sampling
from attnprof.errors import UsageError
from attnprof.record.compare import CompareRecord

SMALL = {"batch": 1, "heads": 2, "seq": 32, "head_dim": 16, "device": "cpu"}
QUICK = Sampling(min_time_s=0.01, rounds=1)


def test_run_is_quiet_and_saves_the_record_it_returns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import attnprof.run.compare as run_compare

    prepared: list[object] = []
    settings: list[object] = []
    real_prepare, real_settings = run_compare.prepare, Sampling.settings

    def counting_prepare(*args: object, **kwargs: object) -> object:
        prepared.append(args)
        return real_prepare(*args, **kwargs)  # type: ignore[arg-type]

    def counting_settings(self: Sampling, *args: object, **kwargs: object) -> object:
        settings.append(args)
        return real_settings(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(run_compare, "prepare", counting_prepare)
    monkeypatch.setattr(Sampling, "settings", counting_settings)
    path = tmp_path / "run.json"
    record = compare.run(CompareRequest(variants=("naive", "sdpa"), workload=SMALL,
                                        timing=QUICK, json=str(path), no_store=True))
    assert capsys.readouterr().out == ""  # no progress asked for: nothing printed
    assert [r.variant for r in record.results] == ["naive", "sdpa"]
    assert all(r.status == "ok" for r in record.results)
    assert CompareRecord.load(path).results == record.results  # the file is the record
    assert len(prepared) == 1 and len(settings) == 1


def test_a_mistake_is_a_usage_error_and_leaves_no_folder(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    with pytest.raises(UsageError, match="--rounds must be a positive integer"):
        compare.run(CompareRequest(variants=("naive",), workload=SMALL,
                                   timing=Sampling(rounds=0), trace_dir=str(traces),
                                   no_store=True))
    with pytest.raises(UsageError, match="no-such-variant"):
        compare.run(CompareRequest(variants=("no-such-variant",), workload=SMALL,
                                   timing=QUICK, trace_dir=str(traces), no_store=True))
    assert not traces.exists()
    assert list(tmp_path.iterdir()) == []
