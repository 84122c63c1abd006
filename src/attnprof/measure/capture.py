"""Capture a torch.profiler trace of one variant: a few steps, each in a named region.

The schedule skips one step and warms up on one more before recording ``steps`` active
steps, so start-up effects (allocator growth, cuDNN plan selection, lazy init) stay out of
the trace. Each step runs inside ``record_function("attnprof::<variant>")``, which is how
the analysis finds "one forward" in the trace, and the trace carries an ``attnprof``
metadata block (variant, workload, steps) so it can be analysed later without the record.
The block also says, per recorded step, how noisy the moment was
(:mod:`attnprof.knowledge.capture_noise`): ``cpu_wait``, the fraction of its wall time the
process's threads waited for a CPU (:mod:`attnprof.measure.contention`), and
``page_faults``, the minor page faults it took (``page_size`` bytes each; with
``page_faults_untraced``, those of one untraced call, when asked for). It also says when
the run had more intra-op threads than CPUs (``oversubscribed``: ``[threads, cpus]``), so a
wait is put down to the run's own threads, not to other processes.
The Chrome trace is written gzip'd, atomically, and valid JSON whatever the names in it
(:mod:`attnprof.measure.trace_export`).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnprof.knowledge.annotations import region_name
from attnprof.measure.allocator import minor_faults, page_size
from attnprof.measure.contention import cpu_wait_s, oversubscribed, wait_fraction
from attnprof.measure.memory import filtered_kineto_stderr
from attnprof.measure.trace_export import metadata_token, write_chrome_trace
from attnprof.workload.settings import CaptureSpec

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
    *,
    untraced_faults: bool = False,
    settle: bool = False,
) -> Path:
    """Profile ``spec.steps`` calls of ``step`` and write the Chrome trace to ``path``.

    ``step`` must already be warmed up (compiled variants compiled), and run under the
    variant's context and grad mode, which the caller holds. ``untraced_faults``: call it
    once more before the profiler starts, to record the page faults an untraced step
    pays beside those of each traced one. ``settle``: a step that frees what earlier
    calls allocated (decode's growing KV cache) is first called once recorded but outside
    any region, so the traced steps free only blocks the profiler saw allocated (see
    :func:`attnprof.measure.memory.profile_step`; a warm-up step does not record them).
    """
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    from attnprof.measure.device import synchronize

    spec = spec or CaptureSpec()
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    label = region_name(variant)
    settling = 1 if settle else 0
    with filtered_kineto_stderr(unknown_frees=settle):
        prof = profile(
            activities=activities,
            record_shapes=True,
            profile_memory=True,
            schedule=schedule(wait=spec.wait, warmup=spec.warmup,
                              active=spec.steps + settling, repeat=1),
        )
        info: dict[str, Any] = {"variant": variant, "region": label, "steps": spec.steps,
                                **(metadata or {})}
        if (own := oversubscribed()) is not None:
            info["oversubscribed"] = list(own)
        if untraced_faults:
            # One untraced call first: the page faults a step pays without the profiler.
            faults = minor_faults()
            step()
            synchronize(device)
            after = minor_faults()
            info["page_faults_untraced"] = (None if faults is None or after is None
                                            else after - faults)
        token = metadata_token()  # the block itself is written in after kineto's export
        first = spec.wait + spec.warmup + settling
        total = first + spec.steps
        waits: list[float | None] = []
        faulted: list[int | None] = []
        with prof:
            for i in range(total):
                if first - settling <= i < first:  # recorded, in no region
                    step()
                    synchronize(device)
                    prof.step()
                    continue
                if i >= first:  # the wait and warm-up steps' readings would be thrown away
                    t0, w0, f0 = time.perf_counter(), cpu_wait_s(), minor_faults()
                with record_function(label):
                    step()
                # Kernels must finish inside the step that launched them.
                synchronize(device)
                if i >= first:
                    waits.append(wait_fraction(w0, cpu_wait_s(), time.perf_counter() - t0))
                    f1 = minor_faults()
                    faulted.append(None if f0 is None or f1 is None else f1 - f0)
                if i == total - 1:
                    # Only a live (recording) profiler carries metadata into the export,
                    # so the block goes in before the last step() stops it: once every
                    # recorded step's waits and faults are known.
                    info.update(cpu_wait=waits, page_faults=faulted, page_size=page_size())
                    prof.add_metadata_json("attnprof", token)
                prof.step()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_chrome_trace(prof, path, token, info)
    return path
