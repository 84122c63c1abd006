"""Which SDPA backend ran, and why the others did not, from what a step left behind.

``F.scaled_dot_product_attention`` is a router; the op it routes to names the backend.
This is the cheap, always-available answer (the CPU side of any trace has it); kernel-level
evidence comes from the trace analysis.

Why a backend was refused is only in PyTorch's warnings. On CUDA they come in sections, one
per fused backend, each a header warning (``"Flash attention kernel not used because:"``)
followed by one warning per failed check; with a backend pinned, the other backends'
sections only say they were runtime disabled. :func:`refusal_of` is the one classification
of a refusal that compare, model and sweep rows share.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from attnprof.formatting import one_line

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


#: What each pinned backend needs, for when PyTorch refuses without a word (it does on CPU).
BACKEND_NEEDS: dict[str, str] = {
    "MATH": "the math backend runs everywhere; a refusal here is unexpected",
    "FLASH_ATTENTION": ("flash needs CUDA sm80+ (or the CPU flash kernel), fp16/bf16 on CUDA, "
                        "head_dim <= 256 and no arbitrary attn_mask"),
    "EFFICIENT_ATTENTION": ("memory-efficient attention (xformers cutlass fmha) runs only on "
                            "CUDA; on CPU SDPA has just the math and flash backends"),
    "CUDNN_ATTENTION": ("cuDNN attention runs only on CUDA (sm80+, cuDNN 9, fp16/bf16); "
                        "on CPU SDPA has just the math and flash backends"),
}
#: How SDPA's dispatcher says that no allowed backend takes the call.
REFUSAL_MARKERS = ("No available kernel", "No viable backend")


def sdpa_refusal(backend: str | None, exc: BaseException, warnings: list[str],
                 device_type: str) -> str | None:
    """PyTorch's reason for refusing an SDPA call with ``backend`` pinned (an ``SDPBackend``
    member name; ``None``: the automatic router), or ``None`` when ``exc`` is no refusal."""
    if not isinstance(exc, RuntimeError) or not any(m in str(exc) for m in REFUSAL_MARKERS):
        return None
    said = refusal_reasons(backend, warnings) if backend else router_reasons(warnings)
    if said:
        return "PyTorch refused: " + " | ".join(said)
    needs = BACKEND_NEEDS.get(backend or "", "no SDPA backend takes these inputs")
    return f"PyTorch refused without a reason on {device_type}: {needs}"


def refusal_of(exc: BaseException, warnings: list[str], backend: str | None,
               device_type: str) -> str | None:
    """Why PyTorch refused a call, or ``None`` when ``exc`` is not a refusal: the one
    classification every command's rows use (``unsupported`` with this reason).

    A refusal is SDPA finding no viable backend (:func:`sdpa_refusal`) or a
    ``NotImplementedError`` (PyTorch's way of declaring a combination unsupported; its
    message says which). Anything else is a failure (``oom`` or ``error``)."""
    reason = sdpa_refusal(backend, exc, warnings, device_type)
    if reason is None and isinstance(exc, NotImplementedError):
        reason = f"PyTorch: {one_line(str(exc))}"
    return reason
