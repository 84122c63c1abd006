"""The shipped device table and the TOML file that extends it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from attnprof.errors import UsageError
from attnprof.knowledge.devices import DEVICES, load_devices, parse_targets

NAMED = ("h100-sxm", "h100-pcie", "h200", "a100-80gb", "a100-40gb", "l4", "l40s", "mi300x",
         "mi250x", "b200")


def test_the_table_holds_every_named_device_with_sane_figures() -> None:
    assert set(NAMED) <= set(DEVICES)
    for device in DEVICES.values():
        assert device.source and device.family
        assert 100 <= device.bandwidth_gbytes_per_s <= 20_000
        assert 16e9 <= device.memory_bytes <= 300e9
        for key, dense in device.peak_tflops.items():
            assert math.isfinite(dense) and dense > 0
            # sparsity doubles a dense figure, never less
            if key in device.sparse_tflops:
                assert device.sparse_tflops[key] >= dense
        # a dtype is either figured or said to be missing, never both
        assert not set(device.peak_tflops) & set(device.missing)


def test_a_dtype_without_a_datasheet_figure_says_why() -> None:
    a100 = DEVICES["a100-80gb"]
    assert a100.peak_flops_per_s("float8_e4m3fn") is None
    assert "Ampere has no FP8" in a100.why_missing("float8_e4m3fn")
    # fp32 is the plain FP32 figure, not TF32's
    assert DEVICES["h100-sxm"].peak_flops_per_s("float32") == 67e12
    assert DEVICES["h100-sxm"].peak_flops_per_s("bfloat16") == 989.5e12


def test_targets_are_parsed_and_unknown_ones_refused() -> None:
    assert [d.name for d in parse_targets("H100-SXM, mi300x,h100-sxm")] == ["h100-sxm",
                                                                            "mi300x"]
    with pytest.raises(UsageError, match="unknown device 'h1000'"):
        parse_targets("h1000")
    with pytest.raises(UsageError, match="names no device"):
        parse_targets(" , ")


def test_a_toml_file_adds_a_device(tmp_path: Path) -> None:
    path = tmp_path / "devices.toml"
    path.write_text('[devices.My-GPU]\nfamily = "hopper"\nbandwidth_gbytes_per_s = 1000\n'
                    'memory_bytes = 16e9\n[devices.My-GPU.peak_tflops]\nbf16 = 100\n')
    table = load_devices(path)
    assert table["my-gpu"].peak_flops_per_s("bfloat16") == 100e12
    assert "h100-sxm" in table


@pytest.mark.parametrize("text, message", [
    ("not = [toml", "not valid TOML"),
    ("[other]\nx = 1\n", "defines no"),
    ('[devices.x]\nfamily = "a"\nbandwidth_gbytes_per_s = -1\nmemory_bytes = 1\n'
     '[devices.x.peak_tflops]\nbf16 = 1\n', "positive and finite"),
    ('[devices.x]\nfamily = "a"\nmemory_bytes = 1\n', "bandwidth_gbytes_per_s"),
])
def test_a_bad_devices_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "d.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_devices(path)


@pytest.mark.parametrize(("name", "dtype", "tflops"), [
    # the figures checked against stored public sources (knowledge/devices.py says which)
    ("h100-sxm", "float32", 67.0), ("h200", "bfloat16", 989.5), ("mi300x", "bfloat16", 1307.4),
    ("mi300x", "float8_e4m3fn", 2614.9), ("mi300x", "float32", 163.4),
    ("l40s", "bfloat16", 362.05), ("l4", "float32", 30.3), ("mi250x", "float32", 95.7),
    # B200: two datasheet vintages; a bound takes the higher figure (80, not 75)
    ("b200", "float32", 80.0), ("b200", "bfloat16", 2250.0),
])
def test_checked_peaks(name: str, dtype: str, tflops: float) -> None:
    assert DEVICES[name].peak_flops_per_s(dtype) == pytest.approx(tflops * 1e12)


def test_checked_bandwidth_memory_and_sms() -> None:
    b200 = DEVICES["b200"]
    # the driver's 7,680-bit bus at 3,996 MHz: 7.67 TB/s, which the datasheet's 7.7 is not below
    assert b200.bandwidth_gbytes_per_s >= 7680 / 8 * 3996e6 * 2 / 1e9
    assert b200.sm_count == 148
    assert (DEVICES["mi300x"].bandwidth_gbytes_per_s, DEVICES["mi300x"].memory_bytes) == (
        5300.0, 192e9)
    assert (DEVICES["h200"].bandwidth_gbytes_per_s, DEVICES["h200"].memory_bytes) == (
        4800.0, 141e9)
    assert DEVICES["l4"].sm_count == 58 and DEVICES["l40s"].sm_count == 142
