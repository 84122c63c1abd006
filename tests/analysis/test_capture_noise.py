"""A model trace says how noisy its moment was: the capture's metadata read back, and the
findings a contended or page-faulting capture gets (the llama-eager attribution miss)."""

from __future__ import annotations

from typing import Any

import pytest

from attnprof.analysis.attribution.capture_noise import capture_noise, capture_noise_findings
from attnprof.knowledge.capture_noise import CONTENDED, EXTRA_FAULT_BYTES, contended, faulted

PAGE = 4096


def block(**fields: Any) -> dict[str, Any]:
    return {"variant": "model/eager/prefill", "steps": 3, **fields}


def test_medians_over_the_steps_and_faults_beyond_an_untraced_step() -> None:
    wait, extra = capture_noise(block(cpu_wait=[0.01, 0.9, 0.02], page_faults=[10, 5000, 30],
                                      page_faults_untraced=10, page_size=PAGE))
    assert wait == pytest.approx(0.02)
    assert extra == pytest.approx((30 - 10) * PAGE)  # one faulting step of three: median


def test_fewer_faults_than_untraced_count_as_none() -> None:
    _, extra = capture_noise(block(page_faults=[0, 0, 0], page_faults_untraced=7,
                                   page_size=PAGE))
    assert extra == 0.0


@pytest.mark.parametrize("meta", [
    None, {}, block(), block(cpu_wait=[None, None], page_faults=[None]),
    block(cpu_wait="fast", page_faults=[1, 2], page_size=PAGE),  # no untraced count
    block(cpu_wait=[True], page_faults=[3], page_faults_untraced=None, page_size=PAGE),
])
def test_what_a_trace_does_not_say_is_none(meta: dict[str, Any] | None) -> None:
    assert capture_noise(meta) == (None, None)


def test_quiet_moments_have_no_finding() -> None:
    assert capture_noise_findings(None, None, "r") == []
    assert capture_noise_findings(CONTENDED, EXTRA_FAULT_BYTES, "r") == []
    assert not contended(0.012) and not faulted(0.0)


def test_a_contended_trace_and_a_faulting_one_each_get_a_warning() -> None:
    found = capture_noise_findings(0.93, 80 * 2**20, "attnprof::model/eager/prefill")
    assert [f.rule for f in found] == ["contended-trace", "traced-page-faults"]
    assert all(f.severity == "warning" and f.region == "attnprof::model/eager/prefill"
               for f in found)
    assert "93%" in found[0].title and found[0].data == {"cpu_wait": 0.93}
    assert "80 MiB" in found[1].title
