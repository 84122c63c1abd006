"""Which SDPA backend ran, read from the ATen op names a step dispatched.

``F.scaled_dot_product_attention`` is a router; the op it routes to names the backend.
This is the cheap, always-available answer (the CPU side of any trace has it); kernel-level
evidence comes from the trace analysis.
"""

from __future__ import annotations

from collections.abc import Iterable

#: ATen op (forward) -> backend label, most specific first.
BACKEND_OPS: tuple[tuple[str, str], ...] = (
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "flash (CPU)"),
    ("aten::_scaled_dot_product_flash_attention", "flash"),
    ("aten::_scaled_dot_product_efficient_attention", "memory-efficient"),
    ("aten::_scaled_dot_product_cudnn_attention", "cuDNN"),
    ("aten::_scaled_dot_product_fused_attention_overrideable", "fused (overrideable)"),
    ("aten::_scaled_dot_product_attention_math", "math"),
)


def sdpa_backend(op_names: Iterable[str]) -> str | None:
    """The backend label for the first SDPA backend op among ``op_names``, else ``None``."""
    names = set(op_names)
    for op, label in BACKEND_OPS:
        if op in names:
            return label
    return None
