"""A model run whose output differs from the reference implementation's is ``wrong``
(issue 21, item 4): NaN's difference used to be ``null`` in the JSON beside an ``ok``."""

from __future__ import annotations

import json

import msgspec
import pytest
import torch

from attnprof.run.model_rows import PhaseMeasurements, phase_row, relative_error

REFERENCE = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(0))


def _row(out: torch.Tensor, dtype: str = "float32"):  # type: ignore[no-untyped-def]
    m = PhaseMeasurements(tokens=32, bare_ms=[1.0, 1.1, 1.2])
    m.error, m.reference = relative_error(out, REFERENCE), "eager"
    return phase_row("sdpa", "prefill", m, dtype)


@pytest.mark.parametrize(("out", "says"), [
    (torch.full_like(REFERENCE, float("nan")), "holds NaN or infinite values where eager's"),
    (REFERENCE.clone().index_fill_(0, torch.tensor([1]), float("inf")), "NaN or infinite"),
    (torch.zeros_like(REFERENCE), "is off eager's by up to"),
])
def test_a_model_output_off_the_reference_is_wrong(out: torch.Tensor, says: str) -> None:
    row = _row(out)
    assert row.status == "wrong" and says in row.reason and row.within_tolerance is False
    assert row.latency_ms is not None  # measured all the same
    encoded = json.loads(msgspec.json.encode(row))
    assert encoded["status"] == "wrong"


def test_a_model_output_within_tolerance_is_ok_and_a_broken_reference_compares_nothing(
        ) -> None:
    close = _row(REFERENCE + 1e-6)
    assert close.status == "ok" and close.within_tolerance and close.max_abs_diff is not None
    broken = torch.full_like(REFERENCE, float("nan"))
    assert relative_error(REFERENCE, broken) is None  # nothing to compare against
