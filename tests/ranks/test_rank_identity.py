"""Which traces are one distributed run's ranks, and which file is which rank: from each
file's ``distributedInfo`` (read from its head alone), else from its name (said so)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from attnprof.analysis.ranks.identify import identify_rank_set, rank_from_name
from attnprof.analysis.ranks.naming import ranks_text
from attnprof.trace.peek import HEAD_BYTES, read_distributed_info


@pytest.mark.parametrize("name, rank", [
    ("rank-0.json.gz", 0), ("rank_12.json", 12), ("trainer_rank3.pt.trace.json", 3),
    ("RANK7.json", 7), ("a100_training_rank0.json.gz", 0), ("job.rank-2.json", 2),
    ("crank3.json", None), ("ranked.json", None), ("trace.json", None),
    ("rank-1-of-rank-4.json", 4), ("frank_5.json", None),
])
def test_a_rank_in_a_file_name(name: str, rank: int | None) -> None:
    assert rank_from_name(f"/some/folder/rank-9/{name}") == rank


@pytest.mark.parametrize("ranks, text", [
    ([3], "rank 3"), ([1, 0], "ranks 0, 1"), ([0, 1, 2, 5], "ranks 0-2, 5"),
    (list(range(2, 128)), "ranks 2-127"), ([4, 4, 6], "ranks 4, 6"),
])
def test_ranks_are_written_as_runs(ranks: list[int], text: str) -> None:
    assert ranks_text(ranks) == text


def _trace(path: Path, info: dict[str, object] | None, *, gz: bool = True,
           after: bool = False) -> Path:
    """A small real-shaped trace; ``info`` as distributedInfo, before (kineto) or after
    the events."""
    body: dict[str, object] = {"schemaVersion": 1}
    if info is not None and not after:
        body["distributedInfo"] = info
    body["traceEvents"] = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                            "tid": 1, "ts": 1.0, "dur": 2.0}]
    if info is not None and after:
        body["distributedInfo"] = info
    data = json.dumps(body).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_the_head_of_a_trace_tells_its_rank(public_traces: Path) -> None:
    info = read_distributed_info(public_traces / "sampled_ranks" / "rank-1.json.gz")
    assert info is not None and (info.rank, info.world_size, info.backend) == (1, 128, "nccl")
    assert read_distributed_info(public_traces / "triton_example.json.gz") is None


def test_distributed_info_after_the_events_is_not_read_from_the_head(tmp_path: Path) -> None:
    late = _trace(tmp_path / "late.json", {"rank": 1, "world_size": 2}, gz=False, after=True)
    assert read_distributed_info(late) is None
    plain = _trace(tmp_path / "plain.json", {"rank": 1, "world_size": 2}, gz=False)
    info = read_distributed_info(plain)
    assert info is not None and (info.rank, info.world_size) == (1, 2)


@pytest.mark.parametrize("header_kib", [0, 7, 9, 70, 300, 2000])
def test_the_key_is_found_in_a_head_of_any_size(tmp_path: Path, header_kib: int) -> None:
    """The head is inflated a piece at a time, the first small (the key is usually a few
    KiB in): a header just past it, several pieces long, or longer than the head read
    (1 MiB: no rank from the head) is read alike."""
    pad = {"pg_config": [{"pg_name": f"{i:06d}", "ranks": list(range(8))}
                         for i in range(header_kib * 1024 // 59)]}  # 59 bytes each
    path = _trace(tmp_path / "t.json.gz", {"rank": 3, "world_size": 4, **pad}, gz=True)
    info = read_distributed_info(path)
    if len(json.dumps(pad)) < HEAD_BYTES:
        assert info is not None and (info.rank, info.world_size) == (3, 4)
    else:
        assert info is None


def test_the_public_folder_is_not_a_rank_set(public_traces: Path) -> None:
    found = identify_rank_set(sorted(str(p) for p in public_traces.glob("*.json.gz")))
    assert not found.is_set and found.reason is not None


@pytest.mark.parametrize("infos, reason", [
    ([{"rank": 0, "world_size": 2}, {"rank": 0, "world_size": 2}], "rank 0 appears twice"),
    ([{"rank": 0, "world_size": 2}, {"rank": 1, "world_size": 4}], "world sizes differ"),
    ([{"rank": 0, "world_size": 2}, {"rank": 2, "world_size": 2}], "rank 2 of a world of 2"),
    ([{"rank": 0, "world_size": 2}, None], "states no rank"),
])
def test_what_is_not_a_set_says_why(tmp_path: Path, infos: list[dict[str, object] | None],
                                    reason: str) -> None:
    paths = [str(_trace(tmp_path / f"t{i}.json.gz", info)) for i, info in enumerate(infos)]
    found = identify_rank_set(paths)
    assert not found.is_set and found.reason is not None and reason in found.reason


def test_ranks_from_file_names_when_the_metadata_is_missing(tmp_path: Path) -> None:
    paths = [str(_trace(tmp_path / f"worker_rank{r}.json.gz", None)) for r in (2, 0, 1)]
    found = identify_rank_set(paths)
    assert found.is_set and found.world_size is None
    assert [(f.rank, f.rank_from) for f in found.files] == [(0, "file name"), (1, "file name"),
                                                           (2, "file name")]
    assert found.notes == ("ranks 0-2 told by file name: the trace has no distributedInfo",)


def test_an_unreadable_file_stays_in_the_set_as_its_rank(tmp_path: Path) -> None:
    good = [str(_trace(tmp_path / f"rank-{r}.json.gz", {"rank": r, "world_size": 3}))
            for r in (0, 1)]
    bad = tmp_path / "rank-2.json.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 this is not deflate data")
    found = identify_rank_set([*good, str(bad)])
    assert found.is_set and found.world_size == 3
    last = found.files[-1]
    assert (last.rank, last.rank_from) == (2, "file name") and last.error is not None


def test_a_single_trace_is_never_a_set(tmp_path: Path) -> None:
    one = _trace(tmp_path / "rank-0.json.gz", {"rank": 0, "world_size": 8})
    assert identify_rank_set([str(one)]).reason == "a single trace"


def test_missing_ranks_of_a_huge_world_are_written_from_the_gaps() -> None:
    from attnprof.analysis.ranks.naming import missing_ranks_text

    assert missing_ranks_text({0, 1}, 128) == "ranks 2-127"
    assert missing_ranks_text({5}, 10**9) == "ranks 0-4, 6-999999999"
    assert missing_ranks_text({0, 2, 4}, 6) == "ranks 1, 3, 5"
    assert missing_ranks_text({1}, 2) == "rank 0"


def test_pipes_are_not_peeked_at_and_read_whole(tmp_path: Path) -> None:
    # Two named pipes carrying rank traces: reading their heads to tell the ranks would
    # take those bytes from the reader, so they are analysed each on its own, intact.
    import os
    import threading

    from attnprof.commands.analyze import AnalyzeRequest
    from attnprof.commands.analyze import run as analyze
    from attnprof.record.analyze import AnalyzeRecord

    pipes = []
    for r in (0, 1):
        source = _trace(tmp_path / f"source-{r}.json", {"rank": r, "world_size": 2}, gz=False)
        pipe = tmp_path / f"rank-{r}.json"
        os.mkfifo(pipe)
        data = source.read_bytes()
        threading.Thread(target=pipe.write_bytes, args=(data,), daemon=True).start()
        pipes.append(str(pipe))
    record = analyze(AnalyzeRequest(paths=tuple(pipes)))
    assert isinstance(record, AnalyzeRecord)
    assert [(r.rank, r.world_size) for r in record.reports] == [(0, 2), (1, 2)]
