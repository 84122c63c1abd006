"""torch's process-wide settings that user code can change, captured and put back.

Every variant of a comparison runs in one process, so a variant that calls
``torch.set_num_threads(1)`` would time every variant after it on one thread (sdpa-math
read 32-100 ms instead of 0.13 ms), one that turns grad mode off would make the others'
backward fail, one that sets a default dtype would change what the reference computes.
:class:`TorchState` captures the settings before user code runs; :meth:`TorchState.restore`
puts back whatever changed and says what it was, so the runner can note it in that
variant's row (only its own numbers ran under its change).

What is covered: intra-op and inter-op threads, grad mode, default dtype and device,
deterministic algorithms, float32 matmul precision, SDPA's backend flags, cuDNN and TF32
flags, oneDNN, anomaly mode, autocast, the RNG state (CPU, and CUDA once initialised), and
the handlers of the signals attnprof relies on (Ctrl-C, SIGTERM, SIGHUP, the SIGALRM of
time limits). What cannot be put back is said as such (inference mode has no setter; the
inter-op pool cannot be resized once it has started).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["TorchState"]


@dataclass(frozen=True)
class _Setting:
    """One global setting: how to read it, how to set it, how to show a value."""

    name: str
    get: Callable[[], Any]
    set: Callable[[Any], object] | None
    show: Callable[[Any], str] = str
    #: Compare values with ``torch.equal`` (tensors) rather than ``==``.
    tensor: bool = False


def _attr(owner: Any, name: str) -> tuple[Callable[[], Any], Callable[[Any], object]]:
    return (lambda: getattr(owner, name)), (lambda value: setattr(owner, name, value))


def _settings() -> list[_Setting]:
    import torch

    cuda, cudnn = torch.backends.cuda, torch.backends.cudnn
    out = [
        _Setting("torch threads", torch.get_num_threads, torch.set_num_threads),
        _Setting("inter-op threads", torch.get_num_interop_threads,
                 torch.set_num_interop_threads),
        _Setting("grad mode", torch.is_grad_enabled, torch.set_grad_enabled, _on_off),
        _Setting("inference mode", torch.is_inference_mode_enabled, None, _on_off),
        _Setting("default dtype", torch.get_default_dtype, torch.set_default_dtype,
                 lambda d: str(d).removeprefix("torch.")),
        _Setting("default device", lambda: str(torch.get_default_device()),
                 lambda d: torch.set_default_device(None if d == "cpu" else d)),
        _Setting("deterministic algorithms",
                 lambda: (torch.are_deterministic_algorithms_enabled(),
                          torch.is_deterministic_algorithms_warn_only_enabled()),
                 lambda v: torch.use_deterministic_algorithms(v[0], warn_only=v[1]),
                 lambda v: ("on, warn only" if v[1] else "on") if v[0] else "off"),
        _Setting("float32 matmul precision", torch.get_float32_matmul_precision,
                 torch.set_float32_matmul_precision),
        _Setting("SDPA flash backend", cuda.flash_sdp_enabled, cuda.enable_flash_sdp,
                 _on_off),
        _Setting("SDPA efficient backend", cuda.mem_efficient_sdp_enabled,
                 cuda.enable_mem_efficient_sdp, _on_off),
        _Setting("SDPA math backend", cuda.math_sdp_enabled, cuda.enable_math_sdp, _on_off),
        _Setting("SDPA cuDNN backend", cuda.cudnn_sdp_enabled, cuda.enable_cudnn_sdp,
                 _on_off),
        _Setting("SDPA math fp16/bf16 reduction", cuda.fp16_bf16_reduction_math_sdp_allowed,
                 cuda.allow_fp16_bf16_reduction_math_sdp, _on_off),
        _Setting("anomaly mode",
                 lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
                 lambda v: torch.set_anomaly_enabled(v[0], v[1]),
                 lambda v: ("on" if v[0] else "off") + (", NaN check" if v[1] else "")),
        _Setting("RNG state", torch.get_rng_state, torch.set_rng_state, tensor=True),
    ]
    for name, owner, attr in (("cuDNN", cudnn, "enabled"), ("cuDNN benchmark", cudnn, "benchmark"),
                              ("cuDNN deterministic", cudnn, "deterministic"),
                              ("cuDNN TF32", cudnn, "allow_tf32"),
                              ("matmul TF32", cuda.matmul, "allow_tf32"),
                              ("oneDNN", torch.backends.mkldnn, "enabled")):
        get, put = _attr(owner, attr)
        out.append(_Setting(name, get, put, _on_off))
    out += [_autocast(device) for device in ("cpu", "cuda")]
    if torch.cuda.is_initialized():  # never initialise CUDA just to read its RNG
        out.append(_Setting("CUDA RNG state", torch.cuda.get_rng_state_all,
                            torch.cuda.set_rng_state_all, tensor=True))
    out += [_handler_of(sig) for sig in _SIGNALS]
    return out


def _autocast(device: str) -> _Setting:
    import torch

    def get() -> tuple[bool, Any]:
        return torch.is_autocast_enabled(device), torch.get_autocast_dtype(device)

    def put(value: tuple[bool, Any]) -> None:
        torch.set_autocast_enabled(device, value[0])
        torch.set_autocast_dtype(device, value[1])

    def show(value: tuple[bool, Any]) -> str:
        return f"on, {str(value[1]).removeprefix('torch.')}" if value[0] else "off"

    return _Setting(f"autocast ({device})", get, put, show)


def _handler_of(sig: signal.Signals) -> _Setting:
    def put(handler: Any) -> None:
        signal.signal(sig, handler)

    return _Setting(f"{sig.name} handler", lambda: signal.getsignal(sig), put, _handler)


_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM") if hasattr(signal, n))


def _on_off(value: object) -> str:
    return "on" if value else "off"


def _handler(handler: object) -> str:
    if handler is signal.SIG_IGN:
        return "ignored"
    if handler is signal.SIG_DFL:
        return "default"
    return getattr(handler, "__qualname__", type(handler).__name__)


def _same(setting: _Setting, a: Any, b: Any) -> bool:
    if not setting.tensor:
        return bool(a == b)
    import torch

    if isinstance(a, list):
        return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(torch.equal(a, b))


class TorchState:
    """torch's process-wide settings as they were when captured (see the module doc)."""

    def __init__(self) -> None:
        self._settings = _settings()
        self._values = [self._read(s) for s in self._settings]

    @staticmethod
    def _read(setting: _Setting) -> Any:
        try:
            value = setting.get()
        except Exception:  # a build without that setting: nothing to guard
            return _UNREADABLE
        return value.clone() if setting.tensor and not isinstance(value, list) else value

    def restore(self, *, quiet_rng: bool = False) -> list[str]:
        """Put back every setting that differs from the capture; one line per setting
        that had changed (``torch threads 2 → 1``), saying so when it could not be put
        back. ``quiet_rng``: put the RNG state back without a line (drawing random numbers
        to initialise weights is what building a module does; drawing them on every call
        is worth saying)."""
        changed = []
        for setting, was in zip(self._settings, self._values, strict=True):
            if was is _UNREADABLE:
                continue
            now = self._read(setting)
            if now is _UNREADABLE or _same(setting, now, was):
                continue
            if setting.tensor:
                line = f"{setting.name}: drew random numbers (its output is random)"
            else:
                line = f"{setting.name} {setting.show(was)} → {setting.show(now)}"
            try:
                if setting.set is None:
                    raise RuntimeError("torch has no setter for it")
                setting.set(was)
            except Exception as exc:  # said in the row, never fatal
                line += f" (could not be put back: {type(exc).__name__}: {exc})"
            if not (setting.tensor and quiet_rng):
                changed.append(line)
        return changed


_UNREADABLE = object()
