"""attnprof: a profiler for attention in PyTorch.

The public API is small and lazy — importing :mod:`attnprof` does not import torch::

    import attnprof
    record = attnprof.compare(variants=["sdpa", "flex"], seq=1024)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from attnprof.record import RunRecord
    from attnprof.workload import Workload

__all__ = ["RunRecord", "UsageError", "Workload", "__version__", "compare"]


def compare(*args: Any, **kwargs: Any) -> RunRecord:
    """Measure attention variants side by side; see :func:`attnprof.runner.compare`."""
    from attnprof.runner import compare as _compare

    return _compare(*args, **kwargs)


def __getattr__(name: str) -> Any:
    # Lazy re-exports keep ``import attnprof`` free of torch.
    if name == "RunRecord":
        from attnprof.record import RunRecord

        return RunRecord
    if name == "Workload":
        from attnprof.workload import Workload

        return Workload
    if name == "UsageError":
        from attnprof.errors import UsageError

        return UsageError
    raise AttributeError(f"module 'attnprof' has no attribute {name!r}")
