"""Fuzzing ``attnprof analyze`` with seeded mutants of real traces (a few dozen here;
``benchmarks/fuzz_analyze.py`` runs thousands): every run exits 0 with a report, or 2 with
one error line and no output file; never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mutations import KINDS, Source, judge, mutant

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
    assert len({mutant(src, s).kind for s in range(200)}) == len(KINDS) + 4  # + gzip damage
