#!/usr/bin/env bash
# One call on a CUDA machine (the device tool's H200): GPU-marked tests, one-step reference
# traces of every variant, and the GPU benchmarks. Everything lands under $OUT, in exactly 8
# files (at most 8 come back, so traces travel as one tarball: add no file without removing
# one). Expected ~4-5 minutes on an H200; the timeouts below add up to 8 minutes at most.
#
# The H200 image has torch, numpy, rich, pytest and hypothesis but not msgspec: carry it as
# a wheel. Here, once (.whl/ is git-ignored):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_17_x86_64 -d .whl msgspec
# then:   device run, carry [".whl"]:   bash scripts/gpu_check.sh
#
# Each step gets SIGINT at its timeout, as Ctrl-C: pytest then reports the tests it ran and
# attnprof keeps the variants that had finished in its --json record.
set -uo pipefail
OUT=${OUT:-out/gpu}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)  # absolute: the script changes directory next
cd "$(dirname "$0")/.." || exit 2
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
# The runs' results store: a scratch file outside $OUT (which holds exactly 8 files), so the
# image needs no platformdirs and its user folder stays clean.
export ATTNPROF_STORE="$(mktemp -d)/runs.db"

if ! $PY -c "import msgspec" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  SITE=$(mktemp -d)
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
    .whl/*.whl
  export PYTHONPATH="$SITE"
fi
if ! $PY -c "import msgspec, numpy, rich, torch" 2>"$OUT/machine.txt"; then
  # Every step below would fail at import: stop before spending the machine's time.
  echo "missing Python packages (see $OUT/machine.txt); carry msgspec as .whl (header)" \
    | tee -a "$OUT/machine.txt"
  exit 2
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi; $PY -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name())"; } \
  > "$OUT/machine.txt" 2>&1

echo "== GPU tests"
# tests/gpu/test_cuda_masks.py: every --mask through SDPA (backend per mask, pinned flash's
# refusal) and flex in bf16, and the packing variants (sdpa-jagged, flex-document, varlen)
# beside a padded batch with its padding waste.
timeout -s INT -k 20 180 $PY -m pytest tests -m gpu -q -p no:cacheprovider 2>&1 \
  | tee "$OUT/gpu_tests.log"

echo "== reference traces: one profiled step of every variant"
TR=$(mktemp -d)
timeout -s INT -k 20 110 $PY -m attnprof compare --device cuda --batch 2 --heads 8 --seq 1024 \
  --head-dim 64 --dtype bf16 --min-time 0.2 --trace "$TR" --trace-steps 1 \
  --json "$OUT/compare_traced.json" 2>&1 | tee "$OUT/compare_traced.log"
tar czf "$OUT/gpu_traces.tar.gz" -C "$TR" .

echo "== default comparison on this GPU"
timeout -s INT -k 20 130 $PY -m attnprof compare --json "$OUT/compare_default.json" 2>&1 \
  | tee "$OUT/compare_default.log"

echo "== timer agreement (attnprof vs torch.utils.benchmark vs triton do_bench)"
timeout -s INT -k 20 60 $PY benchmarks/bench_timer_agreement.py --rounds 3 2>&1 \
  | tee "$OUT/bench_timer.log"
