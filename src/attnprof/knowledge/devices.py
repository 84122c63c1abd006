"""Accelerators attnprof can bound a measured workload on: peak rates, memory and size, from
their makers' datasheets.

Each :class:`Device` gives, per dtype, the peak dense TFLOP/s and (where the datasheet gives
one) the peak with 2:4 structured sparsity, the memory bandwidth (GB/s, 10^9 bytes/s), the
memory capacity (bytes, GB = 10^9 as datasheets count) and the count of streaming
multiprocessors (NVIDIA) or compute units (AMD). Every figure carries its source in a
comment beside it. A dtype the datasheet gives no figure for is absent from ``peak`` and
named in ``missing`` with the reason (FP8 on Ampere: the hardware has none), so a bound is
never made from a guess.

``fp32`` is the plain FP32 figure (no tensor cores): PyTorch runs float32 matmuls in full
FP32 unless ``torch.backends.cuda.matmul.allow_tf32`` (or
``torch.set_float32_matmul_precision``) says otherwise, so the TF32 figure would make a
bound that real fp32 runs cannot reach. Where a datasheet gives FP32 both on vector units
and on matrix cores (AMD's CDNA), the larger is taken: a bound must not be above what the
hardware can do.

Peaks are the silicon's, at boost clock: the library's best kernel reaches a fraction of
them. That is why a bound from this table is a bound (a time the work cannot beat), never a
prediction; see :mod:`attnprof.analysis.projection`.

Users add or override devices with a TOML file (:func:`load_devices`)::

    [devices.my-gpu]
    family = "hopper"
    bandwidth_gbytes_per_s = 3350
    memory_bytes = 80e9
    sm_count = 132
    source = "my vendor's datasheet, rev 3"
    [devices.my-gpu.peak_tflops]
    bf16 = 989.5
    fp32 = 67
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec

from attnprof.errors import UsageError

__all__ = ["DEVICES", "DTYPE_KEYS", "Device", "device_for_name", "device_named",
           "devices_from_toml", "dtype_key", "load_devices", "parse_targets"]

#: The table's dtype names, and the record dtypes (torch's names) they stand for.
DTYPE_KEYS: Mapping[str, str] = MappingProxyType({
    "float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"})


def dtype_key(dtype: str) -> str:
    """The table's name for a record's dtype (``bfloat16`` -> ``bf16``); unknown ones as
    given."""
    return DTYPE_KEYS.get(dtype, dtype)


class Device(msgspec.Struct, frozen=True, kw_only=True):
    """One accelerator's datasheet figures (see the module doc for units)."""

    name: str
    #: Architecture family (``hopper``, ``ampere``, ``ada``, ``blackwell``, ``cdna2``,
    #: ``cdna3``): a projection borrows a measured efficiency only within a family.
    family: str
    #: Dense peak TFLOP/s per dtype key (``fp32``, ``tf32``, ``bf16``, ``fp16``, ``fp8``).
    peak_tflops: dict[str, float]
    #: Peak TFLOP/s with 2:4 structured sparsity, where the datasheet gives it.
    sparse_tflops: dict[str, float] = msgspec.field(default_factory=dict)
    #: dtype key -> why the table has no figure for it.
    missing: dict[str, str] = msgspec.field(default_factory=dict)
    bandwidth_gbytes_per_s: float
    memory_bytes: int
    #: Streaming multiprocessors (NVIDIA) or compute units (AMD); ``None``: not published.
    sm_count: int | None = None
    source: str = ""

    def peak_flops_per_s(self, dtype: str) -> float | None:
        """Dense peak FLOP/s for a record dtype (``bfloat16``), or ``None`` when the
        datasheet has no figure (:meth:`why_missing` says why)."""
        tflops = self.peak_tflops.get(dtype_key(dtype))
        return None if tflops is None else tflops * 1e12

    def why_missing(self, dtype: str) -> str:
        """Why there is no peak for ``dtype`` on this device."""
        key = dtype_key(dtype)
        return self.missing.get(key, f"the datasheet of {self.name} gives no {key} figure")

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Memory bandwidth in bytes per second."""
        return self.bandwidth_gbytes_per_s * 1e9


_GB = 1_000_000_000
_NO_FP8_AMPERE = "Ampere has no FP8 (the A100 datasheet lists none)"
_NO_FP8_CDNA2 = "CDNA2 has no FP8 (the MI250X datasheet lists none)"

#: The shipped table. Sources: "H100 DS" = NVIDIA H100 Tensor Core GPU datasheet
#: (nvidia.com/en-us/data-center/h100, 2023); "H200 DS" = NVIDIA H200 Tensor Core GPU
#: datasheet (2024); "A100 DS" = NVIDIA A100 Tensor Core GPU datasheet (2021); "L4 DS" =
#: NVIDIA L4 Tensor Core GPU datasheet (2023); "L40S DS" = NVIDIA L40S GPU datasheet (2023);
#: "HGX B200 DS" = NVIDIA HGX B200 datasheet, "Individual Blackwell GPU" column (2024);
#: "MI300X DS" = AMD Instinct MI300X accelerator data sheet (2023); "MI250X DS" = AMD
#: Instinct MI250X accelerator data sheet (2021); SM counts NVIDIA publishes in the
#: architecture whitepapers ("Hopper WP" = NVIDIA H100 Tensor Core GPU Architecture
#: whitepaper; "A100 WP" = NVIDIA A100 Tensor Core GPU Architecture whitepaper; "Ada WP" =
#: NVIDIA Ada GPU Architecture whitepaper). Sparse figures are the datasheets' "with
#: sparsity" ones; where a datasheet prints only the sparse figure (L4, H100, B200), the
#: dense one is half of it, as its footnote says.
#:
#: Checked (Dec 2026, without the vendors' PDFs) against stored public copies: the
#: theoretical-TFLOPS table of stas00/ml-engineering (compute/accelerator/README.md: H100
#: SXM/PCIe, H200, A100, L40S, MI300X, MI250X, B200 agree but for B200's FP32 and TF32,
#: fixed below); modal.com's GPU glossary (H100 SXM: 132 SMs, FP32 66.9 TFLOPS at 1,980
#: MHz); a reseller's copy of the L40S datasheet table (every L40S figure, 142 SMs); the
#: MI300X-vs-H200 methodology of alpharomercoma (MI300X BF16 1,307.4, FP8 2,614.9, 5.3
#: TB/s, 192 GB; H200 989.4, 1,978.9, 4.8 TB/s, 141 GB); yobitel's MI250X table (FP32
#: matrix 95.7, BF16 383, 3.2 TB/s); L4: 30.3 FP32 = 58 SMs x 128 lanes x 2 x 2,040 MHz,
#: which the 121 BF16 also fits (databases listing 60 SMs count the full AD104 die).
_TABLE: tuple[Device, ...] = (
    Device(name="h100-sxm", family="hopper",
           peak_tflops={"fp64": 67.0,     # H100 DS, SXM: FP64 Tensor Core 67 TFLOPS
                        "fp32": 67.0,     # H100 DS, SXM: FP32 67 TFLOPS
                        "tf32": 494.5,    # H100 DS, SXM: TF32 Tensor Core 989 (sparse) / 2
                        "bf16": 989.5,    # H100 DS, SXM: BF16 Tensor Core 1,979 (sparse) / 2
                        "fp16": 989.5,    # H100 DS, SXM: FP16 Tensor Core 1,979 (sparse) / 2
                        "fp8": 1979.0},   # H100 DS, SXM: FP8 Tensor Core 3,958 (sparse) / 2
           sparse_tflops={"tf32": 989.0, "bf16": 1979.0, "fp16": 1979.0,  # H100 DS, SXM
                          "fp8": 3958.0},                                 # H100 DS, SXM
           bandwidth_gbytes_per_s=3350.0,  # H100 DS, SXM: GPU memory bandwidth 3.35 TB/s
           memory_bytes=80 * _GB,          # H100 DS, SXM: GPU memory 80 GB
           sm_count=132,                   # Hopper WP: H100 SXM5 132 SMs
           source="NVIDIA H100 Tensor Core GPU datasheet (SXM); Hopper whitepaper (SMs)"),
    Device(name="h100-pcie", family="hopper",
           peak_tflops={"fp64": 51.0,     # H100 DS, PCIe: FP64 Tensor Core 51 TFLOPS
                        "fp32": 51.0,     # H100 DS, PCIe: FP32 51 TFLOPS
                        "tf32": 378.0,    # H100 DS, PCIe: TF32 Tensor Core 756 (sparse) / 2
                        "bf16": 756.5,    # H100 DS, PCIe: BF16 Tensor Core 1,513 (sparse) / 2
                        "fp16": 756.5,    # H100 DS, PCIe: FP16 Tensor Core 1,513 (sparse) / 2
                        "fp8": 1513.0},   # H100 DS, PCIe: FP8 Tensor Core 3,026 (sparse) / 2
           sparse_tflops={"tf32": 756.0, "bf16": 1513.0, "fp16": 1513.0,  # H100 DS, PCIe
                          "fp8": 3026.0},                                 # H100 DS, PCIe
           bandwidth_gbytes_per_s=2000.0,  # H100 DS, PCIe: GPU memory bandwidth 2 TB/s
           memory_bytes=80 * _GB,          # H100 DS, PCIe: GPU memory 80 GB
           sm_count=114,                   # Hopper WP: H100 PCIe 114 SMs
           source="NVIDIA H100 Tensor Core GPU datasheet (PCIe); Hopper whitepaper (SMs)"),
    Device(name="h200", family="hopper",
           peak_tflops={"fp64": 67.0,     # H200 DS, SXM: FP64 Tensor Core 67 TFLOPS
                        "fp32": 67.0,     # H200 DS, SXM: FP32 67 TFLOPS
                        "tf32": 494.5,    # H200 DS, SXM: TF32 Tensor Core 989 (sparse) / 2
                        "bf16": 989.5,    # H200 DS, SXM: BF16 Tensor Core 1,979 (sparse) / 2
                        "fp16": 989.5,    # H200 DS, SXM: FP16 Tensor Core 1,979 (sparse) / 2
                        "fp8": 1979.0},   # H200 DS, SXM: FP8 Tensor Core 3,958 (sparse) / 2
           sparse_tflops={"tf32": 989.0, "bf16": 1979.0, "fp16": 1979.0,  # H200 DS, SXM
                          "fp8": 3958.0},                                 # H200 DS, SXM
           bandwidth_gbytes_per_s=4800.0,  # H200 DS, SXM: GPU memory bandwidth 4.8 TB/s
           memory_bytes=141 * _GB,         # H200 DS, SXM: GPU memory 141 GB
           sm_count=132,                   # Hopper WP: the GH100 die of H100 SXM5, 132 SMs
           source="NVIDIA H200 Tensor Core GPU datasheet (SXM); Hopper whitepaper (SMs)"),
    Device(name="a100-80gb", family="ampere",
           peak_tflops={"fp64": 19.5,     # A100 DS: FP64 Tensor Core 19.5 TFLOPS
                        "fp32": 19.5,     # A100 DS: FP32 19.5 TFLOPS
                        "tf32": 156.0,    # A100 DS: TF32 Tensor Core 156 TFLOPS
                        "bf16": 312.0,    # A100 DS: BFLOAT16 Tensor Core 312 TFLOPS
                        "fp16": 312.0},   # A100 DS: FP16 Tensor Core 312 TFLOPS
           sparse_tflops={"tf32": 312.0, "bf16": 624.0, "fp16": 624.0},  # A100 DS (sparsity)
           missing={"fp8": _NO_FP8_AMPERE},
           bandwidth_gbytes_per_s=2039.0,  # A100 DS, 80GB SXM: GPU memory bandwidth 2,039 GB/s
           memory_bytes=80 * _GB,          # A100 DS, 80GB SXM: 80 GB HBM2e
           sm_count=108,                   # A100 WP: 108 SMs
           source="NVIDIA A100 Tensor Core GPU datasheet (80GB SXM); A100 whitepaper (SMs)"),
    Device(name="a100-40gb", family="ampere",
           peak_tflops={"fp64": 19.5,     # A100 DS: FP64 Tensor Core 19.5 TFLOPS
                        "fp32": 19.5,     # A100 DS: FP32 19.5 TFLOPS
                        "tf32": 156.0,    # A100 DS: TF32 Tensor Core 156 TFLOPS
                        "bf16": 312.0,    # A100 DS: BFLOAT16 Tensor Core 312 TFLOPS
                        "fp16": 312.0},   # A100 DS: FP16 Tensor Core 312 TFLOPS
           sparse_tflops={"tf32": 312.0, "bf16": 624.0, "fp16": 624.0},  # A100 DS (sparsity)
           missing={"fp8": _NO_FP8_AMPERE},
           bandwidth_gbytes_per_s=1555.0,  # A100 DS, 40GB SXM: GPU memory bandwidth 1,555 GB/s
           memory_bytes=40 * _GB,          # A100 DS, 40GB SXM: 40 GB HBM2
           sm_count=108,                   # A100 WP: 108 SMs
           source="NVIDIA A100 Tensor Core GPU datasheet (40GB SXM); A100 whitepaper (SMs)"),
    Device(name="l4", family="ada",
           peak_tflops={"fp32": 30.3,     # L4 DS: FP32 30.3 TFLOPS
                        "tf32": 60.0,     # L4 DS: TF32 Tensor Core 120 (sparse) / 2
                        "bf16": 121.0,    # L4 DS: BFLOAT16 Tensor Core 242 (sparse) / 2
                        "fp16": 121.0,    # L4 DS: FP16 Tensor Core 242 (sparse) / 2
                        "fp8": 242.5},    # L4 DS: FP8 Tensor Core 485 (sparse) / 2
           sparse_tflops={"tf32": 120.0, "bf16": 242.0, "fp16": 242.0,  # L4 DS
                          "fp8": 485.0},                                # L4 DS
           missing={"fp64": "the L4 datasheet gives no FP64 figure"},
           bandwidth_gbytes_per_s=300.0,   # L4 DS: GPU memory bandwidth 300 GB/s
           memory_bytes=24 * _GB,          # L4 DS: 24 GB GDDR6
           sm_count=58,                    # Ada WP (AD104 as configured for L4): 58 SMs
           source="NVIDIA L4 Tensor Core GPU datasheet; Ada whitepaper (SMs)"),
    Device(name="l40s", family="ada",
           peak_tflops={"fp32": 91.6,     # L40S DS: FP32 91.6 TFLOPS
                        "tf32": 183.0,    # L40S DS: TF32 Tensor Core 183 (366 sparse)
                        "bf16": 362.05,   # L40S DS: BF16 Tensor Core 362.05 (733 sparse)
                        "fp16": 362.05,   # L40S DS: FP16 Tensor Core 362.05 (733 sparse)
                        "fp8": 733.0},    # L40S DS: FP8 Tensor Core 733 (1,466 sparse)
           sparse_tflops={"tf32": 366.0, "bf16": 733.0, "fp16": 733.0,  # L40S DS
                          "fp8": 1466.0},                               # L40S DS
           missing={"fp64": "the L40S datasheet gives no FP64 figure"},
           bandwidth_gbytes_per_s=864.0,   # L40S DS: GPU memory bandwidth 864 GB/s
           memory_bytes=48 * _GB,          # L40S DS: 48 GB GDDR6 with ECC
           sm_count=142,                   # L40S DS: 142 third-gen RT cores, one per SM
           source="NVIDIA L40S GPU datasheet"),
    Device(name="b200", family="blackwell",
           # Two datasheet vintages disagree (HGX B200: FP32 75, TF32 2.2 PF sparse; the
           # B200 tables ml-engineering keeps: FP32 80, TF32 1,125 dense): a bound takes the
           # higher, since a peak below what the silicon does would bound nothing.
           peak_tflops={"fp64": 37.0,     # HGX B200 DS, per GPU: FP64/FP64 Tensor Core 37 TF
                        "fp32": 80.0,     # stas00/ml-engineering compute/accelerator: B200 80
                        "tf32": 1125.0,   # stas00/ml-engineering: B200 TF32 1,125 (dense)
                        "bf16": 2250.0,   # HGX B200 DS, per GPU: BF16 TC 4.5 PF (sparse) / 2
                        "fp16": 2250.0,   # HGX B200 DS, per GPU: FP16 TC 4.5 PF (sparse) / 2
                        "fp8": 4500.0},   # HGX B200 DS, per GPU: FP8 TC 9 PF (sparse) / 2
           sparse_tflops={"tf32": 2250.0, "bf16": 4500.0, "fp16": 4500.0,  # 2x the dense
                          "fp8": 9000.0},                                  # HGX B200 DS
           # pytorch/ao#4002: the driver reports a 7,680-bit bus at 3,996 MHz, 7.67 TB/s
           # (the early 8 TB/s assumed 8,192 bits); the datasheet's 7.7 is not below it.
           bandwidth_gbytes_per_s=7700.0,  # HGX B200 DS, per GPU: 180GB HBM3E | 7.7 TB/s
           memory_bytes=180 * _GB,         # HGX B200 DS, per GPU: 180 GB HBM3E
           sm_count=148,                   # pytorch/ao#4002 device query: Number of SMs 148
           source="NVIDIA HGX B200 datasheet (individual GPU figures); FP32/TF32 from "
                  "stas00/ml-engineering's table (the higher); SMs from a device query"),
    Device(name="mi300x", family="cdna3",
           peak_tflops={"fp64": 163.4,    # MI300X DS: FP64 Matrix 163.4 TFLOPS
                        "fp32": 163.4,    # MI300X DS: FP32 Vector and Matrix 163.4 TFLOPS
                        "tf32": 653.7,    # MI300X DS: TF32 Matrix 653.7 TFLOPS
                        "bf16": 1307.4,   # MI300X DS: BFLOAT16 1307.4 TFLOPS
                        "fp16": 1307.4,   # MI300X DS: FP16 1307.4 TFLOPS
                        "fp8": 2614.9},   # MI300X DS: FP8 2614.9 TFLOPS
           sparse_tflops={"tf32": 1307.4, "bf16": 2614.9, "fp16": 2614.9,  # MI300X DS
                          "fp8": 5229.8},                                  # MI300X DS
           bandwidth_gbytes_per_s=5300.0,  # MI300X DS: peak memory bandwidth 5.3 TB/s
           memory_bytes=192 * _GB,         # MI300X DS: 192 GB HBM3
           sm_count=304,                   # MI300X DS: 304 compute units
           source="AMD Instinct MI300X accelerator data sheet"),
    Device(name="mi250x", family="cdna2",
           peak_tflops={"fp64": 95.7,     # MI250X DS: FP64 Matrix 95.7 TFLOPS
                        "fp32": 95.7,     # MI250X DS: FP32 Matrix 95.7 (vector: 47.9)
                        "bf16": 383.0,    # MI250X DS: BF16 383 TFLOPS
                        "fp16": 383.0},   # MI250X DS: FP16 383 TFLOPS
           missing={"fp8": _NO_FP8_CDNA2, "tf32": "CDNA2 has no TF32 (MI250X datasheet)"},
           bandwidth_gbytes_per_s=3276.8,  # MI250X DS: peak memory bandwidth 3.2768 TB/s
           memory_bytes=128 * _GB,         # MI250X DS: 128 GB HBM2e
           sm_count=220,                   # MI250X DS: 220 compute units
           source="AMD Instinct MI250X accelerator data sheet (both dies: one OAM)"),
)

#: The shipped devices by name.
DEVICES: Mapping[str, Device] = MappingProxyType({d.name: d for d in _TABLE})
_FIX = ("see docs/cost.md: [devices.NAME] with family, bandwidth_gbytes_per_s, "
        "memory_bytes and [devices.NAME.peak_tflops]")


def device_named(name: str, table: Mapping[str, Device] = DEVICES) -> Device:
    """The device called ``name`` (case-insensitive), or one :class:`UsageError` listing
    the known names."""
    found = table.get(name.strip().lower())
    if found is None:
        raise UsageError(f"unknown device {name!r}; known: {', '.join(sorted(table))} "
                         "(add others with --devices FILE)")
    return found


def parse_targets(text: str, table: Mapping[str, Device] = DEVICES) -> list[Device]:
    """``"h100-sxm,mi300x"`` -> those devices, in order, each once."""
    names = [n for n in (p.strip().lower() for p in text.split(",")) if n]
    if not names:
        raise UsageError("--to names no device; give e.g. --to h100-sxm,mi300x")
    return [device_named(n, table) for n in dict.fromkeys(names)]


def devices_from_toml(data: Mapping[str, Any], source: str) -> dict[str, Device]:
    """The devices a parsed TOML file defines (``[devices.NAME]`` tables)."""
    entries = data.get("devices")
    if not isinstance(entries, dict) or not entries:
        raise UsageError(f"{source} defines no [devices.NAME] table; {_FIX}")
    found: dict[str, Device] = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            raise UsageError(f"{source}: devices.{name} is not a table; {_FIX}")
        try:
            device = msgspec.convert({**entry, "name": name.lower()}, Device, strict=False)
        except msgspec.ValidationError as exc:
            raise UsageError(f"{source}: devices.{name}: {exc}; {_FIX}") from None
        figures = [device.bandwidth_gbytes_per_s, float(device.memory_bytes),
                   *device.peak_tflops.values(), *device.sparse_tflops.values()]
        if not device.peak_tflops or any(not math.isfinite(f) or f <= 0 for f in figures):
            raise UsageError(f"{source}: devices.{name} needs peak_tflops, and every figure "
                             f"positive and finite; {_FIX}")
        found[device.name] = device
    return found


def load_devices(path: Path | None) -> Mapping[str, Device]:
    """The shipped table, extended (or overridden by name) by the TOML file at ``path``."""
    if path is None:
        return DEVICES
    from attnprof.workload.toml_file import read_toml

    source = f"devices file {str(path)!r}"
    return {**DEVICES, **devices_from_toml(read_toml(path, source, _FIX), source)}


#: What a record's ``device_name`` (``torch.cuda.get_device_name``) says, tested in order:
#: the more specific names first ("H100 PCIe" before "H100", "L40S" before "L4").
_NAME_PATTERNS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("H100", "PCIE"), "h100-pcie"), (("H100",), "h100-sxm"), (("H200",), "h200"),
    (("A100", "80GB"), "a100-80gb"), (("A100",), "a100-40gb"), (("L40S",), "l40s"),
    (("L4",), "l4"), (("B200",), "b200"), (("MI300X",), "mi300x"), (("MI250X",), "mi250x"))


def device_for_name(device_name: str,
                    table: Mapping[str, Device] = DEVICES) -> Device | None:
    """The table's device a record's ``device_name`` names ("NVIDIA H100 80GB HBM3" ->
    h100-sxm), or ``None`` (a CPU, or a device the table lacks)."""
    upper = device_name.upper()
    for words, name in _NAME_PATTERNS:
        if all(w in upper for w in words) and name in table:
            return table[name]
    return table.get(device_name.strip().lower())
