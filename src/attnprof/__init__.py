"""attnprof: a profiler for attention in PyTorch.

The public API is small and lazy — importing :mod:`attnprof` does not import torch::

    import attnprof
    record = attnprof.compare(variants=["sdpa", "flex"], seq=1024)
    model_record = attnprof.profile_model(model, inputs, implementations=["eager", "sdpa"])
    frame = attnprof.load("baseline").to_frame()   # a stored run (or a record file)

    from attnprof.commands import compare                # one function per command
    record = compare.run(attnprof.CompareRequest(variants=("sdpa",), workload={"seq": 512}))

    with attnprof.capture(model, out="runs/", label="baseline") as cap:   # your own loop
        for batch in loader:
            ...; cap.step()
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from attnprof._version import __version__
from attnprof.record import display as _display

if TYPE_CHECKING:
    from attnprof.commands.analyze import AnalyzeRequest
    from attnprof.commands.capture import CaptureRequest
    from attnprof.commands.check import CheckRequest
    from attnprof.commands.compare import CompareRequest, Sampling
    from attnprof.commands.diff import DiffRequest
    from attnprof.commands.env import EnvRequest
    from attnprof.commands.limits import LimitsRequest
    from attnprof.commands.model import ModelRequest
    from attnprof.commands.profile import ProfileRequest
    from attnprof.commands.project import ProjectRequest
    from attnprof.commands.recommend import RecommendRequest
    from attnprof.commands.report import ReportRequest
    from attnprof.commands.runs import RunsRequest
    from attnprof.commands.show import ShowRequest
    from attnprof.commands.sweep import SweepRequest
    from attnprof.errors import UsageError
    from attnprof.record.compare import RunRecord
    from attnprof.record.family import Record, load_record
    from attnprof.record.model import ModelRecord
    from attnprof.run.capture import Capture
    from attnprof.run.trace_handler import TraceHandler
    from attnprof.workload.problem import Workload

__all__ = ["AnalyzeRequest", "CaptureRequest", "CheckRequest", "CompareRequest", "DiffRequest",
           "EnvRequest", "LimitsRequest", "ModelRecord", "ModelRequest", "ProfileRequest",
           "ProjectRequest", "RecommendRequest", "ReportRequest", "RunRecord", "RunsRequest",
           "Sampling", "ShowRequest", "SweepRequest", "UsageError", "Workload", "__version__",
           "capture", "compare", "load", "load_record", "profile_model", "trace_handler"]

#: Lazily re-exported names and the modules that define them (keeps ``import attnprof``
#: free of torch); a command's request is taken by ``attnprof.commands.<command>.run``.
_LAZY = {
    "RunRecord": "attnprof.record.compare",
    "Workload": "attnprof.workload.problem",
    "UsageError": "attnprof.errors",
    "load_record": "attnprof.record.family",
    "ModelRecord": "attnprof.record.model",
    # One request per command; its run is attnprof.commands.<command>.run (docs/api.md).
    "CompareRequest": "attnprof.commands.compare",
    "Sampling": "attnprof.commands.compare",
    "ProfileRequest": "attnprof.commands.profile",
    "CheckRequest": "attnprof.commands.check",
    "SweepRequest": "attnprof.commands.sweep",
    "LimitsRequest": "attnprof.commands.limits",
    "RecommendRequest": "attnprof.commands.recommend",
    "ModelRequest": "attnprof.commands.model",
    "ProjectRequest": "attnprof.commands.project",
    "AnalyzeRequest": "attnprof.commands.analyze",
    "CaptureRequest": "attnprof.commands.capture",
    "DiffRequest": "attnprof.commands.diff",
    "EnvRequest": "attnprof.commands.env",
    "ReportRequest": "attnprof.commands.report",
    "RunsRequest": "attnprof.commands.runs",
    "ShowRequest": "attnprof.commands.show",
}


def compare(*args: Any, **kwargs: Any) -> RunRecord:
    """Measure attention variants side by side; see :func:`attnprof.run.compare.compare`."""
    from attnprof.run.compare import compare as _compare

    return _compare(*args, **kwargs)


def profile_model(model: Any = None, inputs: Any = None, **kwargs: Any) -> ModelRecord:
    """How much of ``model`` is attention, per layer and component; see
    :func:`attnprof.run.model.profile_model`."""
    from attnprof.run.model import profile_model as _profile_model

    return _profile_model(model, inputs, **kwargs)


def capture(model: Any, out: str | os.PathLike[str] = "runs/", label: str | None = None,
            **kwargs: Any) -> Capture:
    """Profile your own loop in place: a context manager whose ``step()`` the loop calls
    after every step, and whose ``record`` holds the analysis once it is over; see
    :func:`attnprof.run.capture.capture` (``kwargs``: the other fields of
    :class:`~attnprof.commands.capture.CaptureRequest`)."""
    from attnprof.commands.capture import CaptureRequest, start

    return start(CaptureRequest(model=model, out=out, label=label, **kwargs))


def trace_handler(dir: str | os.PathLike[str] = "runs/", model: Any = None,
                  **kwargs: Any) -> TraceHandler:
    """An ``on_trace_ready`` handler for your own ``torch.profiler.profile``: writes each
    trace and its record into ``dir``; see :func:`attnprof.run.trace_handler.trace_handler`."""
    from attnprof.run.trace_handler import trace_handler as _trace_handler

    return _trace_handler(dir, model=model, **kwargs)


def load(target: str | os.PathLike[str], store: str | os.PathLike[str] | None = None
         ) -> Record:
    """A record: the file ``target`` when there is one, else the stored run it names (run
    id, unique prefix or label) in ``store`` (default: ``$ATTNPROF_STORE``, else the user's
    store). ``load(x).to_frame()`` is a pandas DataFrame of it (``to_frame("polars")``)."""
    from pathlib import Path

    from attnprof.record.family import load_record
    from attnprof.store import open_store, store_path

    if Path(target).is_file():
        return load_record(target)
    path = Path(store) if store is not None else store_path()
    assert path is not None
    with open_store(path, create=False) as opened:
        return opened.load(os.fspath(target))


def _notebook_html(record: Any) -> str:
    """A record's ``_repr_html_`` (the renderers sit above the records, so the package
    hands them this view: see :mod:`attnprof.record.display`)."""
    from attnprof.render.notebook import notebook_html

    return notebook_html(record)


_display.set_html_view(_notebook_html)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'attnprof' has no attribute {name!r}")
