"""``attnprof project RUN`` on a stored run (by label, by id), and on a record from before
traffic was modelled: its bound falls back to the I/O floor and the row says so, instead
of no bound at all (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnprof.analysis.projection import bound_of, device_target
from attnprof.cli.main import main
from attnprof.knowledge.devices import DEVICES
from attnprof.record.compare import CompareRecord
from attnprof.record.family import load_record
from attnprof.store import open_store

#: A comparison saved by an attnprof that did not model traffic (schema 2): the rows keep
#: FLOPs and the I/O floor (``bytes_moved``), no ``traffic_bytes``.
OLD = Path(__file__).resolve().parents[1] / "fixtures" / "records" / "compare-v2.json"


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, str]:
    record = load_record(OLD)
    path = tmp_path / "runs.db"
    with open_store(path, create=True) as s:
        s.save(record, label="old-cpu")
    return path, record.run_id


@pytest.mark.parametrize("ref", ["label", "id"])
def test_a_stored_run_without_traffic_is_bounded_on_the_io_floor(
        store: tuple[Path, str], ref: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    path, run_id = store
    out = tmp_path / "p.json"
    assert main(["project", "old-cpu" if ref == "label" else run_id, "--to",
                 "h100-sxm,mi300x", "--store", str(path), "--json", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "traffic not modelled" not in text  # the old "none: ..." row
    assert "(I/O floor)" in text
    assert "I/O floor: naive, sdpa had no traffic modelled" in text
    record = load_record(OLD)
    assert isinstance(record, CompareRecord)
    rows = {(r["variant"], r["target"]): r for r in json.loads(out.read_text())["rows"]}
    for row in record.results:
        assert row.traffic_bytes is None and row.bytes_moved is not None
        for name in ("h100-sxm", "mi300x"):
            bound = bound_of(row.flops, row.bytes_moved,
                             device_target(DEVICES[name], record.workload.dtype))
            assert bound is not None
            got = rows[(row.variant, name)]
            assert got["bytes_basis"] == "I/O floor"
            assert got["bound_s"] == pytest.approx(bound.seconds)
            assert got["bound_memory_s"] == pytest.approx(
                row.bytes_moved / (DEVICES[name].bandwidth_bytes_per_s))
