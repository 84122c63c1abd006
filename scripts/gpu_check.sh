#!/usr/bin/env bash
# One call on a CUDA machine (the device tool's H200): GPU-marked tests, one-step reference
# traces of every variant, and the GPU benchmarks. Everything lands under $OUT (at most 8
# files come back, so traces travel as one tarball). Budget: ~8 minutes in all.
#
#   device run:  bash scripts/gpu_check.sh        (carry .whl if msgspec is missing there:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_17_x86_64 -d .whl msgspec)
set -uo pipefail
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
cd "$(dirname "$0")/.."

if ! $PY -c "import msgspec" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install --no-deps --no-index -q .whl/*.whl
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi; $PY -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())"; } \
  > "$OUT/machine.txt" 2>&1

echo "== GPU tests"
timeout 200 $PY -m pytest tests -m gpu -q -p no:cacheprovider 2>&1 | tee "$OUT/gpu_tests.log"

echo "== reference traces: one profiled step of every variant"
TR=$(mktemp -d)
timeout 120 $PY -m attnprof compare --device cuda --batch 2 --heads 8 --seq 1024 --head-dim 64 \
  --dtype bf16 --min-time 0.2 --trace "$TR" --trace-steps 1 --json "$OUT/compare_traced.json" \
  2>&1 | tee "$OUT/compare_traced.log"
tar czf "$OUT/gpu_traces.tar.gz" -C "$TR" .

echo "== default comparison on this GPU"
timeout 90 $PY -m attnprof compare --json "$OUT/compare_default.json" 2>&1 | tee "$OUT/compare_default.log"

echo "== timer agreement (attnprof vs torch.utils.benchmark vs triton do_bench)"
timeout 90 $PY benchmarks/bench_timer_agreement.py --rounds 3 2>&1 | tee "$OUT/bench_timer.log"
