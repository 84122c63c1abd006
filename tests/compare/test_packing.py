"""A padded batch (``--mask padding --lengths``) beside its packed alternatives: the same
outputs on the real tokens, their latencies side by side, and the padding waste."""

from __future__ import annotations

import pytest

from attnprof.measure.accuracy import scored_rows
from attnprof.measure.inputs import make_inputs
from attnprof.run.compare import compare
from attnprof.variants import get_variant, resolve_variants
from attnprof.workload.problem import Workload

PADDED = Workload(batch=4, heads=4, kv_heads=2, seq=64, head_dim=16, mask="padding",
                  lengths="8..64")


def _outputs(workload: Workload, names: list[str]) -> dict[str, object]:
    import torch

    inputs = make_inputs(workload, seed=3)
    out = {}
    with torch.no_grad():
        for name in names:
            out[name] = get_variant(name).build(workload).call(inputs.q, inputs.k, inputs.v)
    return out


@pytest.mark.parametrize("causal", [True, False])
def test_packed_variants_give_the_padded_runs_output_on_the_real_tokens(causal: bool) -> None:
    import torch

    workload = PADDED.replace(causal=causal).validate()
    names = ["sdpa", "sdpa-unpadded", "flex-document-eager"] + ([] if causal
                                                               else ["sdpa-jagged"])
    out = _outputs(workload, names)
    real = scored_rows(workload)
    assert real is not None and not bool(real.all())  # some rows are padding
    keep = real.expand(-1, workload.heads, -1, workload.head_dim)
    padded = out["sdpa"]
    for name in names[1:]:
        packed = out[name]
        assert torch.allclose(packed[keep], padded[keep], atol=1e-5), name
        assert (packed[~keep] == 0).all(), name  # nothing is made up for the padding


def test_a_padded_comparison_reports_padding_waste_and_the_packed_latencies(
        fast_settings) -> None:
    workload = PADDED.replace(causal=False).validate()
    names = ["sdpa", "sdpa-unpadded", "sdpa-jagged", "flex-document-eager", "varlen"]
    record = compare(workload, names, settings=fast_settings)
    rows = {r.variant: r for r in record.results}
    for name in names[:-1]:
        assert rows[name].status == "ok", (name, rows[name].reason)
        assert rows[name].max_abs_error is not None and rows[name].max_abs_error < 1e-4
        assert rows[name].latency_ms is not None and rows[name].latency_ms.median > 0
    assert rows["varlen"].status == "unsupported" and "CUDA" in rows["varlen"].reason
    waste = record.padding_waste
    assert waste is not None
    lengths = list(workload.row_lengths())
    assert waste.lengths == lengths and waste.real_tokens == sum(lengths)
    # non-causal: the padded call spans B·S² pairs, the real tokens Σ n²
    assert waste.padded_flops == 4 * 4 * 16 * 4 * 64 * 64
    assert waste.useful_flops == 4 * 4 * 16 * sum(n * n for n in lengths)
    assert waste.flops_share == pytest.approx(1 - sum(n * n for n in lengths) / (4 * 64 * 64))
    assert waste.padded_ms == rows["sdpa"].latency_ms.median
    assert waste.unpadded_ms == rows["sdpa-unpadded"].latency_ms.median
    assert waste.time_ms == pytest.approx(waste.padded_ms - waste.unpadded_ms)


def test_jagged_sdpa_with_a_causal_mask_is_unsupported_with_pytorchs_reason(
        fast_settings) -> None:
    record = compare(PADDED, ["sdpa-jagged"], settings=fast_settings)
    row = record.result("sdpa-jagged")
    assert row.status == "unsupported" and "is_causal" in row.reason


def test_packing_variants_refuse_other_masks_and_join_the_default_list_when_padded(
        fast_settings) -> None:
    record = compare(PADDED.replace(mask="causal", lengths=None),
                     ["sdpa-unpadded", "flex-document-eager"], settings=fast_settings)
    assert all(r.status == "unsupported" and "--mask padding" in r.reason
               for r in record.results)
    assert record.padding_waste is None
    assert "sdpa-jagged" in {v.name for v in resolve_variants(None, PADDED)}
    assert "sdpa-jagged" not in {v.name for v in resolve_variants(None, Workload())}


def test_without_the_unpadded_run_the_waste_says_how_to_measure_time(fast_settings) -> None:
    record = compare(PADDED, ["sdpa"], settings=fast_settings)
    waste = record.padding_waste
    assert waste is not None and waste.time_ms is None
    assert "sdpa-unpadded" in waste.note and waste.flops_share > 0


@pytest.mark.slow
def test_compiled_flex_document_matches_the_padded_run(fast_settings) -> None:
    record = compare(PADDED, ["sdpa", "flex-document"], settings=fast_settings)
    row = record.result("flex-document")
    assert row.status == "ok" and row.max_abs_error is not None and row.max_abs_error < 1e-4
    assert row.compile_time_s is not None
