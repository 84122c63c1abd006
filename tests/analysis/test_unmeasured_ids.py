"""A correlation or External id of 0 is no id (issue 31, item 1): kineto and CUPTI number
them from 1 and write 0 where an event has none; taken for an id, a 0 joins a kernel to an
unrelated runtime call or op that also wrote 0."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from attnprof.analysis.index.device_events import link_device_events
from attnprof.analysis.index.op_index import index_cpu_ops
from attnprof.trace import load_trace


def test_zero_ids_are_absent(public_traces: Path, tmp_path: Path) -> None:
    with gzip.open(public_traces / "a100_alexnet_inference.json.gz", "rb") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    kernel = next(e for e in events if e.get("cat") == "kernel")
    launch_id = kernel["args"]["correlation"]
    # The kernel lost its ids (written as 0); a sync call and an unrelated op wrote 0 too.
    kernel["args"]["correlation"] = kernel["args"]["External id"] = 0
    sync = next(e for e in events if e.get("cat") == "cuda_runtime"
                and e["name"] == "cudaStreamIsCapturing")
    sync["args"]["correlation"] = 0
    op = next(e for e in events if e.get("cat") == "cpu_op" and e.get("args", {}).get(
        "External id") not in (None, launch_id))
    op["args"]["External id"] = 0
    path = tmp_path / "zeros.json"
    path.write_text(json.dumps(doc))

    trace = load_trace(path)
    ops = index_cpu_ops(trace)
    devices = link_device_events(ops)
    t = trace.events
    (k,) = [i for i, row in enumerate(devices.row.tolist())
            if t.ts[row] + trace.meta.ts_origin_us == kernel["ts"]
            and t.strings[int(t.name[row])] == kernel["name"]]
    # Not joined to the sync call (correlation 0) nor to the op (External id 0): the ac2g
    # flow arriving at the kernel still carries its launch's id, and finds the launch.
    assert t.strings[int(devices.api[k])] == "cudaLaunchKernel"
    assert int(t.correlation[devices.launch[k]]) == launch_id
    assert ops.with_external_id([0]).tolist() == [-1]
