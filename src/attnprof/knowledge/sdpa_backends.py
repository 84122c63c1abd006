"""Which SDPA backend ran, and why the others did not, from what a step left behind.

``F.scaled_dot_product_attention`` is a router; the op it routes to names the backend.
This is the cheap, always-available answer (the CPU side of any trace has it); kernel-level
evidence comes from the trace analysis.

Why a backend was refused is only in PyTorch's warnings. On CUDA they come in sections, one
per fused backend, each a header warning (``"Flash attention kernel not used because:"``)
followed by one warning per failed check; with a backend pinned, the other backends'
sections only say they were runtime disabled.
"""

from __future__ import annotations

import re
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


#: The name PyTorch's CUDA dispatcher heads each fused backend's section with, lower-cased
#: ("Memory efficient kernel not used because:", "cuDNN attention kernel not used because:").
_SECTION_NAMES: dict[str, str] = {
    "FLASH_ATTENTION": "flash attention",
    "EFFICIENT_ATTENTION": "memory efficient",
    "CUDNN_ATTENTION": "cudnn attention",
}
_HEADER = re.compile(r"^(?P<name>.+?) kernel not used because:?$", re.IGNORECASE)
# TORCH_WARN appends where in ATen it fired (last, possibly cut short by the runner's
# one-line limit); it says nothing to the user.
_TRIGGERED = re.compile(r"\s*\(Triggered internally at .*$")


def refusal_reasons(backend: str, warnings: list[str]) -> list[str]:
    """What PyTorch said about refusing ``backend`` (an ``SDPBackend`` member name).

    The pinned backend's section of the dispatcher's debug warnings, its header first; the
    other sections only say those backends were disabled by the pin. When that section is
    missing or empty (Python shows a repeated warning once; some checks warn once per
    process), every warning but the headers and the "runtime disabled" ones is kept.
    """
    want = _SECTION_NAMES.get(backend)
    section: str | None = None
    header, mine, others = "", [], []
    for raw in warnings:
        text = _TRIGGERED.sub("", raw).strip()
        if m := _HEADER.match(text):
            section = m.group("name").strip().lower()
            if section == want:
                header = text
            continue
        if want is not None and section == want:
            mine.append(text)
        elif "runtime disabled" not in text:
            others.append(text)
    if mine:
        return [f"{header} {mine[0]}", *mine[1:]]
    return others


def router_reasons(warnings: list[str]) -> list[str]:
    """One line per refused backend: its header and its failed checks, ``;``-joined.

    For the automatic router (nothing pinned), where every section may matter; sections
    that only say the backend was disabled are dropped, and so are warnings before the
    first header (they are not the router's).
    """
    lines: list[str] = []
    header: str | None = None
    checks: list[str] = []

    def close() -> None:
        if header is not None and checks:
            lines.append(f"{header} {'; '.join(checks)}")

    for raw in warnings:
        text = _TRIGGERED.sub("", raw).strip()
        if _HEADER.match(text):
            close()
            header, checks = text, []
        elif "runtime disabled" in text:
            continue
        elif header is not None:
            checks.append(text)
    close()
    return lines
