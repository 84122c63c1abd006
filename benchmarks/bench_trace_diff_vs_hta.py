"""``attnprof diff`` of two traces against HTA's TraceDiff: do they agree on what was added
and removed, and how long does each take?

On HTA's own trace-diff pair (``a100_trace_control`` against ``v100_trace_diff_test``, in
``examples/traces``): HTA's ``TraceDiff.ops_diff`` (its defaults: the first
iteration of the first rank, CPU ops and GPU kernels) against the ``added`` and
``removed`` kernels and ops of attnprof's diff of the ``ProfilerStep`` region, compared on
the names both model (HTA also counts every CUDA runtime call; attnprof diffs the calls
that launched device work, listed apart). Both sides are timed whole-process, imports
included.

    pip install -c constraints.txt -e '.[bench]'
    python benchmarks/bench_trace_diff_vs_hta.py [--traces examples/traces]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HTA = """
import json, sys
from hta.trace_diff import LabeledTrace, TraceDiff
control = LabeledTrace("control", trace_dir=sys.argv[1])
test = LabeledTrace("test", trace_dir=sys.argv[2])
cats = {}
for t in (control, test):
    s = t.get_ops_summary(t.extract_ops())
    cats.update(zip(s["name"], s["cat"]))
d = TraceDiff.ops_diff(control, test)
json.dump({"added": d["added"], "deleted": d["deleted"], "cats": cats}, open(sys.argv[3], "w"))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[1] / "examples" / "traces"
    parser.add_argument("--traces", type=Path, default=default)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="attnprof-bench-tracediff-"))
    names = ("a100_trace_control", "v100_trace_diff_test")
    folders = []
    for name in names:
        (tmp / name).mkdir()
        (tmp / name / f"{name}.json.gz").symlink_to(args.traces / f"{name}.json.gz")
        folders.append(str(tmp / name))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "attnprof", "diff",
                    *(str(args.traces / f"{n}.json.gz") for n in names), "--store",
                    str(tmp / "runs.db"), "--json", str(tmp / "ours.json")], check=True,
                   capture_output=True)
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", HTA, *folders, str(tmp / "hta.json")], check=True,
                   capture_output=True)
    hta_s = time.perf_counter() - started
    hta = json.loads((tmp / "hta.json").read_text())
    (region,) = json.loads((tmp / "ours.json").read_text())["traces"][0]["regions"]
    counted = [*region["kernels"], *region["ops"]]
    print(f"attnprof diff {ours_s:.2f} s, HTA TraceDiff {hta_s:.2f} s (whole process) -> "
          f"{hta_s / ours_s:.1f}x")
    for state, theirs in (("added", hta["added"]), ("removed", hta["deleted"])):
        ours = {c["name"] for c in counted if c["state"] == state}
        modelled = {n for n in theirs if hta["cats"].get(n) != "cuda_runtime"}
        runtime = sorted(n for n in theirs if hta["cats"].get(n) == "cuda_runtime")
        launched = sorted(c["name"] for c in region["launches"] if c["state"] == state)
        verdict = "agree" if ours == modelled else "DIFFER"
        print(f"{state}: attnprof {len(ours)}, HTA {len(modelled)} ops and kernels -> "
              f"{verdict} (only HTA: {sorted(modelled - ours)[:5]}, only attnprof: "
              f"{sorted(ours - modelled)[:5]}); runtime calls HTA lists: {runtime}, "
              f"launch calls attnprof lists: {launched}")


if __name__ == "__main__":
    main()
