"""Fuzz ``attnprof analyze`` with thousands of seeded mutants of real traces.

Usage::

    python benchmarks/fuzz_analyze.py [--mutants 3000] [--seed 0] [--timeout 30]
                                      [--whole-process] [--keep DIR] [--no-capture]

The mutants are those of the suite's fuzz test (``tests/trace/mutations.py``): values of
the wrong type, numbers past float range, control characters in names, JSON nested
thousands deep, missing keys, events that are not objects, reordered or negative times,
odd header blocks, cut-off files, byte noise, runs of bytes written twice (ids grown huge),
bit flips, swapped values and events, damaged gzip streams. The sources are the
small public traces (``examples/traces``) and, unless ``--no-capture``, a CPU
capture of naive attention made here with torch.profiler.

Each mutant is written to a file and analysed with ``attnprof analyze FILE --json OUT``:

* by default in a worker process that runs ``attnprof.cli.main.main`` for one mutant after
  another (stdout a real UTF-8 file, stderr captured), with a per-mutant timeout: a worker
  that does not answer in time is killed (a hang) and replaced;
* with ``--whole-process``, as its own ``python -m attnprof analyze`` process.

A run is good when it exits 0 with a report, or 2 with one ``attnprof: error:`` line and
no output file (``mutations.judge``); anything else, or a traceback, is a crash. The
report counts outcomes per kind of mutation and lists every crash and hang with the seed
that replays it (``--keep DIR`` also saves those files).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLIC = REPO / "examples" / "traces"
SMALL = ["cpu_only.json.gz", "mi250_rocm_minitoy.json.gz", "triton_example.json.gz",
         "a100_alexnet_inference.json.gz", "cupti_counters.json.gz"]
sys.path.insert(0, str(REPO / "tests" / "trace"))

from mutations import Mutant, Source, judge, mutant  # noqa: E402


# ---- the worker: one process, many mutants --------------------------------------------
def _worker() -> None:
    """Read a mutant path per line; answer with one JSON line per run."""
    from attnprof.cli.main import main

    answer = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        for line in sys.stdin:
            path, out = line.rstrip("\n").split("\t")
            err = io.StringIO()
            code = 1
            try:
                with contextlib.redirect_stdout(devnull), contextlib.redirect_stderr(err):
                    code = main(["analyze", path, "--json", out])
            except BaseException:  # a crash: what we are looking for
                err.write(traceback.format_exc())
            answer.write(json.dumps({"code": code, "stderr": err.getvalue()}) + "\n")
            answer.flush()


class _Worker:
    """A worker process and the timeout on each of its answers."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, path: Path, out: Path, timeout: float) -> tuple[int | None, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{path}\t{out}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None, ""
        line = self.proc.stdout.readline()
        if not line:  # the worker died (a crash of the interpreter itself)
            return -1, f"worker died with status {self.proc.wait()}"
        result = json.loads(line)
        return int(result["code"]), str(result["stderr"])

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _whole_process(path: Path, out: Path, timeout: float) -> tuple[int | None, str]:
    try:
        done = subprocess.run([sys.executable, "-m", "attnprof", "analyze", str(path),
                               "--json", str(out)], capture_output=True, text=True,
                              timeout=timeout, check=False, errors="replace")
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stderr


# ---- the driver ---------------------------------------------------------------------
def _sources(capture: bool, folder: Path) -> list[Source]:
    found = [Source.from_bytes(name, (PUBLIC / name).read_bytes())
             for name in SMALL if (PUBLIC / name).is_file()]
    if capture:
        from bench_large_trace import capture_source

        found.append(Source.from_bytes("capture", capture_source(folder).read_bytes()))
    if not found:
        raise SystemExit(f"no source traces: {PUBLIC} is missing and --no-capture was given")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0, help="first seed (mutant i: seed + i)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per mutant")
    parser.add_argument("--whole-process", action="store_true",
                        help="one python -m attnprof process per mutant")
    parser.add_argument("--keep", type=Path, help="save crashing and hanging mutants here")
    parser.add_argument("--no-capture", action="store_true",
                        help="only the public traces (no torch capture)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker()
        return
    with tempfile.TemporaryDirectory(prefix="attnprof-fuzz-") as tmp:
        folder = Path(tmp)
        sources = _sources(not args.no_capture, folder)
        print(f"sources: {', '.join(f'{s.name} ({len(s.events)} events)' for s in sources)}")
        _fuzz(args, sources, folder)


def _fuzz(args: argparse.Namespace, sources: list[Source], folder: Path) -> None:
    outcomes: Counter[tuple[str, str]] = Counter()
    problems: list[tuple[Mutant, int, str, str]] = []
    seconds: list[tuple[float, str]] = []
    worker = None if args.whole_process else _Worker()
    started = time.perf_counter()
    try:
        for i in range(args.mutants):
            seed = args.seed + i
            m = mutant(sources[seed % len(sources)], seed)
            path = folder / ("mutant.json.gz" if m.gzipped else "mutant.json")
            path.write_bytes(m.data)
            out = folder / "out.json"
            out.unlink(missing_ok=True)
            t0 = time.perf_counter()
            if worker is None:
                code, err = _whole_process(path, out, args.timeout)
            else:
                code, err = worker.run(path, out, args.timeout)
                if code is None or code == -1:  # hung or died: start afresh
                    worker.close()
                    worker = _Worker()
            seconds.append((time.perf_counter() - t0, m.name))
            wrong = judge(code, err, out.read_bytes() if out.exists() else None)
            outcomes[(m.kind, f"exit {code}" if wrong is None else wrong)] += 1
            if wrong is not None:
                problems.append((m, seed, wrong, err))
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / (m.name + (".json.gz" if m.gzipped else ".json"))
                     ).write_bytes(m.data)
            if (i + 1) % 500 == 0:
                print(f"  {i + 1} mutants, {len(problems)} problems, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
    finally:
        if worker is not None:
            worker.close()
    _report(args, outcomes, problems, seconds, time.perf_counter() - started)


def _report(args: argparse.Namespace, outcomes: Counter[tuple[str, str]],
            problems: list[tuple[Mutant, int, str, str]], seconds: list[tuple[float, str]],
            total: float) -> None:
    mode = "whole process each" if args.whole_process else "in a worker process"
    print(f"\n{args.mutants} mutants ({mode}), seeds {args.seed}..{args.seed + args.mutants - 1}"
          f", {total:.0f} s, timeout {args.timeout:g} s per mutant")
    kinds = sorted({k for k, _ in outcomes})
    results = sorted({r for _, r in outcomes})
    print(f"{'mutation':17s} " + " ".join(f"{r:>10s}" for r in results))
    for kind in kinds:
        print(f"{kind:17s} " + " ".join(f"{outcomes[(kind, r)]:10d}" for r in results))
    crashes = [p for p in problems if p[2] != "hang"]
    hangs = [p for p in problems if p[2] == "hang"]
    times = sorted(s for s, _ in seconds)
    print(f"\nper mutant: median {statistics.median(times):.3f} s, slowest "
          f"{max(seconds)[0]:.2f} s ({max(seconds)[1]})")
    print(f"crashes: {len(crashes)}   hangs: {len(hangs)}")
    for m, seed, wrong, err in problems:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        print(f"  {wrong}: seed {seed} ({m.kind}, {m.name}): {last[:200]}")
    print("goal met: 0 crashes, 0 hangs" if not problems else "goal NOT met")


if __name__ == "__main__":
    main()
