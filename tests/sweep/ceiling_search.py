"""One memory-ceiling search, run once a session (the ``naive_ceiling`` fixture) and
repeated where another executor must find the same: naive's sequence length within
20 MiB, in steps of 256 up to 1280. naive fits to 1024 (16 MiB of its own tensors there,
25 MiB at 1280: four runs find it), sdpa-flash to the top."""

from __future__ import annotations

from typing import Any

from attnprof.workload.problem import Workload

CEILING_BASE = Workload(batch=1, heads=2, kv_heads=2, seq=1024, head_dim=16).validate()
CEILING_SEARCH: dict[str, Any] = {"field_name": "seq", "budget": 20 << 20, "step": 256,
                                  "maximum": 1280, "probe_timeout_s": 120}
