"""Fuzzing ``attnprof analyze`` with seeded mutants of real traces (a few dozen here;
``benchmarks/fuzz_analyze.py`` runs thousands): every run exits 0 with a report, or 2 with
one error line and no output file; never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutations import GZIP_KINDS, KINDS, Source, judge, mutant

from attnprof.cli.main import main

# Small real traces: a CPU trace, ROCm, Triton, a GPU inference, CUPTI counters.
SMALL = ["cpu_only.json.gz", "mi250_rocm_minitoy.json.gz", "triton_example.json.gz",
         "a100_alexnet_inference.json.gz", "cupti_counters.json.gz"]
MUTANTS_PER_SOURCE = 10


@pytest.fixture(scope="module")
def sources(public_traces: Path, cpu_capture: Path) -> list[Source]:
    found = [Source.from_bytes(name, (public_traces / name).read_bytes()) for name in SMALL]
    return [*found, Source.from_bytes("capture", cpu_capture.read_bytes())]


def test_mutants_exit_0_or_2_without_a_traceback(
        sources: list[Source], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seen: set[str] = set()
    problems = []
    for src in sources:
        for seed in range(MUTANTS_PER_SOURCE):
            m = mutant(src, seed)
            seen.add(m.kind.split("-")[0])
            path = tmp_path / (m.name + (".json.gz" if m.gzipped else ".json"))
            path.write_bytes(m.data)
            out = tmp_path / "out.json"
            out.unlink(missing_ok=True)
            try:
                code: int | None = main(["analyze", str(path), "--json", str(out)])
                err = capsys.readouterr().err
            except Exception as exc:  # a crash: report it with the others
                code, err = 1, f"Traceback: {type(exc).__name__}: {exc}"
                capsys.readouterr()
            wrong = judge(code, err, out.read_bytes() if out.exists() else None)
            if wrong:
                problems.append(f"{m.name}: {wrong}: {err.strip()[-300:]}")
            path.unlink()
    assert not problems, "\n".join(problems)
    assert len(seen) >= 6  # the seeds reach most kinds of damage


def test_mutants_are_reproducible(sources: list[Source]) -> None:
    src = sources[0]
    assert [mutant(src, s).data for s in range(20)] == [mutant(src, s).data for s in range(20)]
    kinds = {mutant(src, s).kind for s in range(300)}
    assert len(kinds) == len(KINDS) + len(GZIP_KINDS) + 1  # + gzip damage, bit flips


def _written_twice(text: str, nth: int, key: str, copies: int) -> str:
    """``text`` with the digits of ``key`` in its ``nth`` cudaStreamSynchronize event
    written ``copies`` times over."""
    at = -1
    for _ in range(nth + 1):
        at = text.index('"name": "cudaStreamSynchronize"', at + 1)
    start = text.index(f'"{key}": ', at) + len(key) + 4
    end = start
    while text[end].isdigit():
        end += 1
    return text[:start] + text[start:end] * copies + text[end:]


@pytest.mark.parametrize("copies", [2, 3])
def test_digit_runs_written_twice_in_sync_events_ids(
        public_traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        copies: int) -> None:
    """The mutant that crashed analyze (issue 16 item 21): runs of bytes duplicated in the
    ids of two synchronizing runtime calls (pid 28692242869224 in one, tid 28692242869224 in
    the other, beside ids of 2869224), and grouping the waits by thread raised "pair
    members too far apart to combine into one int64 key"."""
    src = Source.from_bytes("a100", (public_traces / "a100_alexnet_inference.json.gz")
                            .read_bytes())
    path = tmp_path / "t.json"
    path.write_text(_written_twice(_written_twice(src.text, 0, "pid", copies), 1, "tid",
                                   copies))
    out = tmp_path / "out.json"
    code = main(["analyze", str(path), "--json", str(out)])
    assert judge(code, capsys.readouterr().err, out.read_bytes() if out.exists() else None
                 ) is None
    assert code == 0  # a huge id is a value like any other: the trace is analysed
