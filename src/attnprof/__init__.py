"""attnprof: a profiler for attention in PyTorch.

The public API is small and lazy — importing :mod:`attnprof` does not import torch::

    import attnprof
    record = attnprof.compare(variants=["sdpa", "flex"], seq=1024)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnprof._version import __version__

if TYPE_CHECKING:
    from attnprof.record.compare import RunRecord
    from attnprof.spec.workload import Workload

__all__ = ["RunRecord", "UsageError", "Workload", "__version__", "compare"]


def compare(*args: Any, **kwargs: Any) -> RunRecord:
    """Measure attention variants side by side; see :func:`attnprof.run.compare.compare`."""
    from attnprof.run.compare import compare as _compare

    return _compare(*args, **kwargs)


def __getattr__(name: str) -> Any:
    # Lazy re-exports keep ``import attnprof`` free of torch.
    if name == "RunRecord":
        from attnprof.record.compare import RunRecord

        return RunRecord
    if name == "Workload":
        from attnprof.spec.workload import Workload

        return Workload
    if name == "UsageError":
        from attnprof.errors import UsageError

        return UsageError
    raise AttributeError(f"module 'attnprof' has no attribute {name!r}")
