"""Load a trace of more than 1 GB with memory far below its size.

Usage::

    python benchmarks/bench_large_trace.py [--size-gib 1.0] [--source capture|public] [--gzip]
    python benchmarks/bench_large_trace.py --scaling [N] [--size-gib 1.0] [--source ...]

1. Take a real trace: by default a CPU capture of a small attention forward made here with
   torch.profiler (``record_shapes`` and ``profile_memory``, so ops carry shapes and there are
   ``[memory]`` events); ``--source public`` uses the largest public GPU trace instead.
2. Write ``--size-gib`` of uncompressed JSON to a temporary folder by repeating its events
   with timestamps shifted past the previous copy and ids (External id, correlation, flow
   id, Sequence number, ...) offset, so every copy is a distinct, well-formed step. With
   ``--gzip`` a ``.json.gz`` copy is written and loaded too.
3. In a fresh subprocess that imports attnprof (not torch), with malloc in the state
   ``attnprof analyze`` puts it in (``reuse``), load it with ``load_trace`` and
   run ``kernel_breakdown`` plus a per-op breakdown, then the whole ``analyze_trace`` pipeline
   (regions, op trees, kernels per step, findings); report the times and the peak RSS over the
   post-import baseline next to the file size. The temporary files are removed at the end.

With ``--scaling N`` the same trace is written at N sizes (``--size-gib`` halved N-1 times),
each measured ``--repeat`` times in fresh subprocesses (sizes in turn, fastest run kept),
and ``time = c * events ** k`` is fitted by least squares on the logarithms, for loading and
for the analysis: ``k`` is the exponent.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PUBLIC = (
    Path(__file__).resolve().parents[1] / "examples/traces/v100_training_large.json.gz"
)
ID_ARGS = ("External id", "correlation", "Sequence number", "Record function id", "Ev Idx")


def capture_source(folder: Path) -> Path:
    """A real CPU trace of naive attention forwards (torch imported only here)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    q, k, v = (torch.randn(2, 8, 128, 64) for _ in range(3))

    def attention() -> torch.Tensor:
        scores = (q @ k.transpose(-2, -1)) * 64**-0.5
        mask = torch.ones(128, 128, dtype=torch.bool).tril()
        return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v

    attention()  # warm up: first-call allocations and kernel selection stay out of the trace
    path = folder / "source.json"
    with profile(
        activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True
    ) as prof:
        for step in range(8):
            with record_function(f"ProfilerStep#{step}"):
                attention()
    prof.export_chrome_trace(str(path))
    return path


def write_large(source: Path, out: Path, size: int) -> tuple[int, int]:
    """Repeat ``source``'s events into ``out`` until it holds ``size`` bytes; (bytes, events)."""
    import msgspec

    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rb") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    stamps = [e["ts"] for e in body if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in body if "ts" in e) - min(stamps) + 1000
    ints = [e.get("id") for e in body] + [
        a.get(k) for e in body for a in [e.get("args") or {}] for k in ID_ARGS
    ]
    stride = max((i for i in ints if isinstance(i, int)), default=0) + 1
    encode = msgspec.json.Encoder().encode
    written = n = 0
    with open(out, "wb") as f:
        head = json.dumps(doc)[:-1]  # the header keys, object left open
        f.write((head + (", " if doc else "") + '"traceEvents": [\n').encode())
        f.write(encode(meta)[1:-1])
        sep = b",\n" if meta else b"\n"
        copy = 0
        while written < size:
            for e in body:
                if "ts" in e:
                    e["ts"] += span if copy else 0
                if isinstance(e.get("id"), int):
                    e["id"] += stride if copy else 0
                args = e.get("args") or {}
                for key in ID_ARGS:
                    if isinstance(args.get(key), int) and args[key] >= 0:
                        args[key] += stride if copy else 0
            chunk = encode(body)[1:-1]
            f.write(sep + chunk)
            sep = b",\n"
            written += len(chunk) + 2
            n += len(body)
            copy += 1
        f.write(b'\n], "traceName": "bench_large_trace"}\n')
    return out.stat().st_size, n + len(meta)


def _status(field: str) -> int:
    """A byte count from /proc/self/status (VmRSS, VmHWM)."""
    lines = Path("/proc/self/status").read_text().splitlines()
    return int(next(x for x in lines if x.startswith(field + ":")).split()[1]) * 1024


def _worker(path: Path) -> None:
    """Load, break down, and report; runs in a fresh process without torch."""
    import gc

    import numpy as np

    from attnprof.analysis.passes.breakdown import kernel_breakdown
    from attnprof.measure.allocator import set_cpu_allocator
    from attnprof.trace import ROW_COLUMNS, load_trace

    set_cpu_allocator("reuse")  # malloc as `attnprof analyze` sets it
    gc.collect()
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak-RSS mark
    base = _status("VmRSS")
    t0 = time.perf_counter()
    trace = load_trace(path)
    t1 = time.perf_counter()
    kernels = kernel_breakdown(trace)
    t = trace.events
    ops = t.mask_cat("cpu_op") & t.mask_ph("X")
    per_name = np.bincount(t.name[ops], weights=t.dur[ops], minlength=len(t.strings))
    top = [(t.strings[int(i)], float(per_name[i])) for i in np.argsort(per_name)[::-1][:3]]
    t2 = time.perf_counter()
    from attnprof.analysis.analyze import analyze_trace

    report = analyze_trace(trace)  # the whole `attnprof analyze` pipeline, findings included
    t3 = time.perf_counter()
    sides = [*vars(t.launches).values(), *vars(t.memory_records).values()]
    table = sum(getattr(t, c).nbytes for c in ROW_COLUMNS) + sum(a.nbytes for a in sides)
    result = {
        "load_s": t1 - t0,
        "breakdown_s": t2 - t1,
        "analyze_s": t3 - t2,
        "regions": sum(r.instances for r in report.regions),
        "findings": len(report.findings),
        "events": len(t),
        "peak_increase": _status("VmHWM") - base,
        "peak_total": _status("VmHWM"),
        "table_bytes": table,
        "kernels": kernels.count,
        "top_ops": top,
    }
    print(json.dumps(result))


def _run_worker(path: Path) -> dict[str, Any]:
    """Load and analyse ``path`` in a fresh subprocess; what it measured."""
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"loading {path.name} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def measure(path: Path, text_size: int) -> None:
    """Load ``path`` in a fresh subprocess and print what it reports."""
    r = _run_worker(path)
    mib = 2**20
    disk = path.stat().st_size / mib
    print(f"\n{path.name}: {disk:,.0f} MiB on disk, {text_size / mib:,.0f} MiB of JSON, ", end="")
    print(f"{r['events']:,} events")
    rate = text_size / mib / r["load_s"]
    print(f"  load_trace        {r['load_s']:7.1f} s   ({rate:.0f} MiB/s of JSON)")
    ops = ", ".join(f"{name} {us / 1e6:.1f} s" for name, us in r["top_ops"])
    print(f"  breakdowns        {r['breakdown_s']:7.2f} s   ", end="")
    print(f"(kernels: {r['kernels']}; top ops: {ops})")
    print(f"  analyze_trace     {r['analyze_s']:7.1f} s   ({r['regions']:,} region instances, "
          f"{r['findings']} findings)")
    ratio = r["peak_increase"] / text_size
    print(f"  peak RSS increase {r['peak_increase'] / mib:7.0f} MiB = {ratio:.3f} x the JSON size")
    print(f"  peak RSS total    {r['peak_total'] / mib:7.0f} MiB", end="")
    print(f" (the loaded table itself: {r['table_bytes'] / mib:.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-gib", type=float, default=1.0)
    parser.add_argument("--source", choices=["capture", "public"], default="capture")
    parser.add_argument("--gzip", action="store_true", help="also write and load a .json.gz copy")
    parser.add_argument("--scaling", type=int, metavar="N", nargs="?", const=4, default=0,
                        help="fit time against size over N sizes (default 4) halving down "
                             "from --size-gib")
    parser.add_argument("--repeat", type=int, default=3,
                        help="with --scaling: runs per size, the fastest kept (default 3)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker)
        return
    folder = Path(tempfile.mkdtemp(prefix="attnprof-large-"))
    try:
        source = capture_source(folder) if args.source == "capture" else PUBLIC
        if args.scaling:
            scaling(source, folder, args.size_gib, args.scaling, args.repeat)
            return
        t0 = time.perf_counter()
        big = folder / "large.json"
        size, n = write_large(source, big, int(args.size_gib * 2**30))
        print(f"wrote {big.name}: {size / 2**20:,.0f} MiB, {n:,} events from {args.source} "
              f"in {time.perf_counter() - t0:.0f} s")  # fmt: skip
        measure(big, size)
        if args.gzip:
            packed = folder / "large.json.gz"
            with open(big, "rb") as f, gzip.open(packed, "wb", compresslevel=1) as g:
                shutil.copyfileobj(f, g, 16 << 20)
            big.unlink()
            measure(packed, size)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def scaling(source: Path, folder: Path, size_gib: float, sizes: int, repeat: int) -> None:
    """Time load and analysis of the same trace at ``sizes`` sizes, each half the next, and
    fit ``time = c * events ** k`` by least squares on the logarithms: ``k`` near 1 is
    linear, the goal is at most 1.1. Each size is measured ``repeat`` times, the sizes taken
    in turn (smallest to largest, then again), and the fit uses each size's fastest run: a
    busy machine only ever adds time."""
    import numpy as np

    paths = []
    for k in reversed(range(sizes)):
        path = folder / f"scaled-{k}.json"
        write_large(source, path, int(size_gib * 2**30 / 2**k))
        paths.append(path)
    runs: list[list[dict[str, Any]]] = [[] for _ in paths]
    for _ in range(repeat):
        for path, done in zip(paths, runs, strict=True):
            done.append(_run_worker(path))
    rows = []
    for path, done in zip(paths, runs, strict=True):
        best = {key: min(r[key] for r in done) for key in ("load_s", "analyze_s")}
        r = {**done[0], **best, "peak_increase": max(r["peak_increase"] for r in done)}
        rows.append(r)
        spread = "/".join(f"{x['analyze_s']:.2f}" for x in done)
        print(f"  {path.stat().st_size / 2**20:7,.0f} MiB {r['events']:>11,} events "
              f"{r['regions']:>8,} instances: load {r['load_s']:6.2f} s, analyze "
              f"{r['analyze_s']:6.2f} s (runs {spread}), peak +"
              f"{r['peak_increase'] / 2**20:,.0f} MiB", flush=True)
    events = np.log([r["events"] for r in rows])
    slopes = {}
    for key in ("load_s", "analyze_s"):
        slopes[key] = float(np.polyfit(events, np.log([r[key] for r in rows]), 1)[0])
        print(f"{key.removesuffix('_s'):8s} time ~ events^{slopes[key]:.2f}")
    met = slopes["analyze_s"] <= 1.1
    print("goal met (analysis exponent <= 1.1)" if met else "goal NOT met")


if __name__ == "__main__":
    main()
