"""A kernel's dtype: from its name, else from the op that launched it, else unknown.

Checked on public GPU traces against the raw ``Input type`` of the launching op, read here
without attnprof's index.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from attnprof.knowledge.kernel_names import decode_kernel_name, names_integer_data


def test_a_triton_kernel_takes_its_dtype_from_the_launching_op(public_traces: Path,
                                                                load_public: Any) -> None:
    _, report = load_public("triton_example.json.gz")
    (kernel,) = report.regions[0].kernels
    assert decode_kernel_name(kernel.name).dtype is None  # the name does not say
    assert (kernel.dtype, kernel.dtype_source) == ("fp32", "launching op")
    assert kernel.short == "Triton pointwise (add_cos_sin) · fp32 (launching op)"
    with gzip.open(public_traces / "triton_example.json.gz", "rb") as f:
        events = json.load(f)["traceEvents"]
    (op,) = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == kernel.launched_by]
    assert "float" in op["args"]["Input type"]


def test_names_that_state_their_dtype_keep_it_and_integer_kernels_stay_unknown(
        load_public: Any) -> None:
    _, report = load_public("a100_trace_control.json.gz")
    kernels = [k for r in report.regions for k in r.kernels]
    stated = [k for k in kernels if k.dtype_source == "name"]
    assert stated and all(k.dtype == decode_kernel_name(k.name).dtype for k in stated)
    integer = [k for k in kernels if names_integer_data(k.name)
               and decode_kernel_name(k.name).dtype is None]
    # e.g. bounds_check_indices_kernel<long>, launched by an op whose first float input is
    # an embedding table: that float says nothing about an index kernel.
    assert any("bounds_check_indices_kernel<long" in k.name for k in integer)
    assert all(k.dtype is None and k.dtype_source is None for k in integer)
    # Copies and sets move bytes: no dtype is borrowed for them.
    assert all(k.dtype is None for k in kernels if k.category in ("memcpy", "memset"))


def test_an_unknown_matmul_precision_is_said_not_guessed(load_public: Any) -> None:
    # AlexNet's complex cuBLAS GEMM names no real precision and the trace has no shapes.
    _, report = load_public("a100_alexnet_inference.json.gz")
    (gemm,) = [k for k in report.regions[0].kernels if k.name == "ampere_gcgemm_64x64_nt"]
    assert gemm.dtype is None and gemm.dtype_source is None
    assert gemm.short.endswith("· dtype ?")
