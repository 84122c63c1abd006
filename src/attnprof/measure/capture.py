"""Capture a torch.profiler trace of one variant: a few steps, each in a named region.

The schedule skips one step and warms up on one more before recording ``steps`` active
steps, so start-up effects (allocator growth, cuDNN plan selection, lazy init) stay out of
the trace. Each step runs inside ``record_function("attnprof::<variant>")``, which is how
the analysis finds "one forward" in the trace, and the trace carries an ``attnprof``
metadata block (variant, workload, steps) so it can be analysed later without the record.
The Chrome trace is written gzip'd, atomically.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnprof.atomic import atomic_path
from attnprof.knowledge.annotations import region_name
from attnprof.measure.memory import filtered_kineto_stderr
from attnprof.spec.settings import CaptureSpec

#: Characters of a variant's name kept in its trace's file name (file names stop at 255
#: bytes; a user variant's name holds a whole path).
_NAME_CHARS = 100


def trace_file_name(variant: str) -> str:
    """A file-system-safe trace name for a variant (user variants contain ``/`` and ``:``).

    A name that had to be changed (characters replaced, or cut) gets a short hash of the
    whole name, so two variants of one run never share a trace file (``a/x.py:f`` and
    ``a_x.py:f`` would both read ``a_x.py_f``); a built-in name is kept as it is.
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", variant).strip("_.") or "variant"
    if safe != variant or len(safe) > _NAME_CHARS:
        digest = hashlib.sha1(variant.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[:_NAME_CHARS]}-{digest}"
    return f"{safe}.pt.trace.json.gz"


def capture_trace(
    step: Callable[[], object],
    variant: str,
    device: str,
    path: Path,
    spec: CaptureSpec | None = None,
    metadata: dict[str, Any] | None = None,
) -> Path:
    """Profile ``spec.steps`` calls of ``step`` and write the Chrome trace to ``path``.

    ``step`` must already be warmed up (compiled variants compiled), and run under the
    variant's context and grad mode, which the caller holds.
    """
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    from attnprof.measure.device import synchronize

    spec = spec or CaptureSpec()
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    label = region_name(variant)
    with filtered_kineto_stderr():
        prof = profile(
            activities=activities,
            record_shapes=True,
            profile_memory=True,
            schedule=schedule(wait=spec.wait, warmup=spec.warmup, active=spec.steps, repeat=1),
        )
        info = {"variant": variant, "region": label, "steps": spec.steps, **(metadata or {})}
        with prof:
            for i in range(spec.wait + spec.warmup + spec.steps):
                if i == spec.wait + spec.warmup:
                    # Only a live (recording) profiler carries metadata into the export.
                    prof.add_metadata_json("attnprof", json.dumps(info))
                with record_function(label):
                    step()
                # Kernels must finish inside the step that launched them.
                synchronize(device)
                prof.step()
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=".json.gz") as tmp:
            prof.export_chrome_trace(str(tmp))
    return path
