"""``--dropout`` and ``--autocast``: what they do to the SDPA backend and to the error,
how accuracy is judged under dropout, and every bad value refused before torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnprof.errors import UsageError
from attnprof.measure.accuracy import TOLERANCE
from attnprof.run.compare import compare
from attnprof.run.precision import ACCURACY_AT_ZERO
from attnprof.workload.problem import Workload

TINY = Workload(batch=1, heads=4, kv_heads=2, seq=64, head_dim=16)


def test_dropout_moves_cpu_sdpa_off_the_flash_kernel_and_is_checked_at_zero(
        fast_settings) -> None:
    plain = compare(TINY, ["sdpa"], settings=fast_settings).result("sdpa")
    record = compare(TINY.replace(dropout=0.1), ["sdpa", "sdpa-math", "sdpa-flash", "naive"],
                     settings=fast_settings)
    sdpa, math, flash, naive = record.results
    assert plain.sdpa_backend == "flash (CPU)" and sdpa.sdpa_backend == "math"
    for row in (sdpa, math):
        assert row.status == "ok" and row.within_tolerance, row.reason
        assert ACCURACY_AT_ZERO in row.notes
    assert flash.status == "unsupported" and "do not support non-zero dropout" in flash.reason
    assert naive.status == "unsupported" and "applies no attention dropout" in naive.reason
    assert record.workload.dropout == 0.1


def test_autocast_runs_in_16_bits_judged_by_the_16_bit_tolerance(fast_settings) -> None:
    record = compare(TINY.replace(autocast="bfloat16"), ["sdpa", "naive"],
                     settings=fast_settings)
    for row in record.results:
        assert row.status == "ok" and row.within_tolerance, row.reason
        assert row.tolerance == TOLERANCE["bfloat16"]
        assert row.max_abs_error is not None and row.max_abs_error > 1e-4  # really 16-bit
        assert any("under torch.autocast(bfloat16)" in n for n in row.notes)


@pytest.mark.parametrize(("fields", "said"), [
    ({"dropout": 1.0}, "--dropout must be a probability in [0, 1), got 1.0"),
    ({"dropout": -0.1}, "--dropout must be a probability in [0, 1)"),
    ({"autocast": "fp8"}, "--autocast 'fp8' is not a 16-bit dtype"),
    ({"autocast": "float32"}, "is not a 16-bit dtype"),
    ({"autocast": "bf16", "dtype": "float16"}, "but --dtype is float16"),
])
def test_bad_precision_is_a_usage_error(fields: dict[str, object], said: str) -> None:
    with pytest.raises(UsageError, match=None) as caught:
        TINY.replace(**fields).validate()
    assert said in str(caught.value)


_PROBE = ("import sys\nfrom attnprof.cli.main import main\n"
          "print(main(sys.argv[1:]), 'torch' in sys.modules)")


@pytest.mark.parametrize(("flags", "said"), [
    (["--dropout", "1"], "--dropout must be a probability in [0, 1), got 1.0"),
    (["--dropout", "nan"], "--dropout must be a probability in [0, 1), got nan"),
    (["--autocast", "fp8"], "--autocast 'fp8' is not a 16-bit dtype; use bf16 or fp16"),
    (["--autocast", "bf16", "--dtype", "fp16"], "--dtype is float16"),
])
def test_a_bad_flag_is_one_line_and_exit_2_before_torch(flags: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE, "compare", *flags, "--no-store"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.split() == ["2", "False"], (done.stdout, done.stderr)
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("attnprof: error:") and said in line, line
