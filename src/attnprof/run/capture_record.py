"""A captured trace of the user's own loop, made into a record, written and stored.

Shared by :func:`attnprof.capture` and :func:`attnprof.trace_handler`: the trace is
analysed exactly as ``attnprof analyze`` analyses it (:func:`~attnprof.analysis.analyze.
analyze_trace`), so the record is an ``analyze`` record — ``show``, ``diff``, ``report``
and ``--html`` take it as they take any — and ``attnprof analyze`` of the same trace gives
the same figures. What only the capture knows goes in the report's ``attnprof`` block under
``capture``: the schedule, the steps the loop ran and recorded, whether it ended early, and
the labels' cost — each label's, timed on this machine
(:func:`~attnprof.measure.label_cost.label_cost_us`), times the labels a recorded step
opened, read from the trace.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from attnprof.errors import UsageError
from attnprof.knowledge.annotations import MODULE_PREFIX, PART_PREFIX
from attnprof.record.analyze import AnalyzeRecord
from attnprof.store import Store, open_store, store_path

__all__ = [
    "StoreChoice",
    "analyse_capture",
    "check_store",
    "label_count",
    "run_folder_name",
    "save_in_store",
]

#: ``store=``: ``None`` for the usual one ($ATTNPROF_STORE, else the user's), ``False`` for
#: none, or a path.
StoreChoice = str | os.PathLike[str] | bool | None


def check_store(store: StoreChoice) -> Path | None:
    """The store's path, opened (and made) now so a bad one fails before the loop runs;
    ``None`` for no store. The default store in a read-only home is a warning, not a
    failure (the capture is what was asked for; the store a convenience)."""
    if store is False:
        return None
    if store is True:
        store = None
    named = store is not None or os.environ.get("ATTNPROF_STORE", "").strip() != ""
    path = store_path(None if store is None else os.fspath(store))
    assert path is not None
    try:
        open_store(path, create=True).close()
    except UsageError as exc:
        if named:
            raise
        warnings.warn(f"attnprof: {exc}; this capture is not stored (pass store= a "
                      "writable path, or store=False)", stacklevel=3)
        return None
    return path


def save_in_store(path: Path | None, record: AnalyzeRecord, label: str | None,
                  command: str) -> str | None:
    """Store ``record`` (with ``label``) in the store at ``path``; its run id (``None``
    without a store)."""
    if path is None:
        return None
    store: Store = open_store(path, create=True)
    try:
        return store.save(record, label=label, command=command, cwd=os.getcwd()).run_id
    finally:
        store.close()


def run_folder_name(run_id: str, label: str | None) -> str:
    """The run's folder in ``out``: its id, then its label made file-system safe."""
    if not label:
        return run_id
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_.")[:60]
    return f"{run_id}-{safe}" if safe else run_id


def label_count(trace: Any) -> int:
    """How many of attnprof's model labels the trace holds (CPU annotations only: the
    device timeline's copies would count each twice)."""
    events = trace.events
    named = events.mask_name(f"^(?:{re.escape(MODULE_PREFIX)}|{re.escape(PART_PREFIX)})")
    return int(np.count_nonzero(named & events.mask_cat("user_annotation")))


def analyse_capture(trace_path: Path, capture: dict[str, Any],
                    *, partial: bool) -> AnalyzeRecord:
    """The record of the trace at ``trace_path``: its analysis, with ``capture`` (what the
    capture knows: schedule, steps, label cost per label ``label_cost_us``) and the labels'
    cost per step added to the report's ``attnprof`` block."""
    from attnprof.analysis.analyze import analyze_trace
    from attnprof.trace import load_trace

    trace = load_trace(trace_path)
    report = analyze_trace(trace)
    block = dict(report.attnprof or {})
    info = {**block.get("capture", {}), **capture}
    steps = report.model.steps if report.model is not None else 0
    labels = label_count(trace)
    per_label = info.get("label_cost_us")
    if steps and isinstance(per_label, (int, float)):
        per_step = labels / steps
        info["labels_per_step"] = per_step
        info["labels_cost_us_per_step"] = per_step * per_label
        step_us = report.model.total_cpu_us if report.model is not None else 0.0
        if step_us > 0:
            info["labels_cost_share"] = min(per_step * per_label / step_us, 1.0)
    block["capture"] = info
    report.attnprof = block
    return AnalyzeRecord(reports=[report], status="partial" if partial else "complete")
