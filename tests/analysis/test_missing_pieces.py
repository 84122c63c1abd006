"""Rules and passes never crash on a trace with pieces missing or mangled.

Real captures are degraded in seeded, repeatable ways (events dropped, args removed or of
the wrong type, names swapped for ones the rules look for); the analysis must still return
a report. Deterministic: a fixed seed per case.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest

from attnprof.analysis.analyze import analyze_trace
from attnprof.errors import UsageError
from attnprof.record.compare import RunRecord
from attnprof.trace import load_trace
from attnprof.workload.problem import Workload

_NAMES = ["aten::masked_fill", "aten::copy_", "aten::repeat_interleave", "aten::tril",
          "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math",
          "FlexAttentionAutogradOp", "aten::softmax", "attnprof::x", "ProfilerStep#3"]


def _degrade(events: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for e in events:
        r = rng.random()
        if r < 0.2:
            continue
        e = dict(e)
        if r < 0.3 and "args" in e:
            e["args"] = {k: v for k, v in e["args"].items() if rng.random() < 0.5}
        elif r < 0.32 and "args" in e:
            e["args"] = {k: rng.choice(["x", [], None]) for k in e["args"]}
        elif r < 0.34 and "dur" in e:
            e["dur"] = rng.choice([-1, e["dur"] * 3])
        elif r < 0.36:
            e["ts"] = e.get("ts", 0) + rng.uniform(-50, 50)
        elif r < 0.37:
            e["name"] = rng.choice(_NAMES)
        out.append(e)
    return out


@pytest.mark.parametrize("variant", ["naive", "sdpa-math", "flex-eager", "gqa-repeat-kv"])
def test_degraded_captures_still_analyse(variant: str, cpu_record: RunRecord,
                                         workload: Workload, tmp_path: Path) -> None:
    with gzip.open(cpu_record.result(variant).trace, "rb") as f:
        doc = json.load(f)
    rng = random.Random(variant)
    for trial in range(12):
        broken = {**doc, "traceEvents": _degrade(doc["traceEvents"], rng)}
        if trial % 2:
            broken.pop("attnprof", None)
        path = tmp_path / f"{trial}.json"
        path.write_text(json.dumps(broken))
        try:
            trace = load_trace(path)
        except UsageError:
            continue  # nothing left that is a trace: the loader says so
        report = analyze_trace(trace, workload=workload if trial % 3 == 0 else None)
        assert report.regions is not None and report.findings is not None
