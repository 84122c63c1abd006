"""attnprof: a profiler for attention in PyTorch."""

from __future__ import annotations

__version__ = "0.1.0"
