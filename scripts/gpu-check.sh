#!/usr/bin/env bash
# Runs the CUDA kernels on a GPU: the CUDA tests (their device cases run only with a GPU), then
# tune_gemm_cuda and tune_conv2d_cuda, each against cuBLAS / cuDNN (docs/cuda.md).
#
#   scripts/gpu-check.sh BUILD_DIR [OUT_DIR]
#
# BUILD_DIR holds a build with TUNEKIT_CUDA on (tests/tunekit_cuda_tests, examples/tune_*_cuda).
# Each step runs under its own time limit and the script goes on after a failed step; it exits
# non-zero if any step failed. Logs, tuning logs and curves go to OUT_DIR (default: gpu-check).
# Environment: GEMM_SIZES (default "2048 4096"; empty: none), CONV_LAYERS (default
# "resnet18.C2 resnet18.C9"; empty: none), SECONDS_PER_RUN (tuning time of each program run,
# default 90), TUNER (default tpe, the programs' default), BATCH (images per conv2d run, default 1), SKIP_TESTS=1
# (the tuning programs only).
set -u
build=${1:?usage: scripts/gpu-check.sh BUILD_DIR [OUT_DIR]}
out=${2:-gpu-check}
mkdir -p "$out"
gemm_sizes=${GEMM_SIZES-2048 4096}
conv_layers=${CONV_LAYERS-resnet18.C2 resnet18.C9}
seconds=${SECONDS_PER_RUN:-90}
tuner=${TUNER:-tpe}
batch=${BATCH:-1}
failed=0

step() {  # step NAME LIMIT_S COMMAND...: runs one step, its output to the terminal and OUT_DIR
  local name=$1 limit=$2
  shift 2
  echo "=== $name ($(date -u +%H:%M:%S))"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "=== $name FAILED (exit $rc)"
    failed=1
  fi
}

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
fi
if [ -z "${SKIP_TESTS:-}" ]; then
  step cuda-tests 300 "$build/tests/tunekit_cuda_tests"
  # In the whole program earlier cases open a device in the test process, so the LocalFarm case
  # checks that its forked workers refuse CUDA; alone (as under ctest) its workers must measure.
  step cuda-farm-alone 120 "$build/tests/tunekit_cuda_tests" "--test-case=cuda device: CUDA workers*"
fi
for n in $gemm_sizes; do
  step "gemm-$n" $((seconds + 120)) "$build/examples/tune_gemm_cuda" --size "$n" --tuner "$tuner" \
    --budget 1000 --seconds "$seconds" --log "$out/gemm-$n.jsonl" --curve "$out/gemm-$n.csv"
done
if [ -x "$build/examples/tune_conv2d_cuda" ]; then
  for layer in $conv_layers; do
    step "conv2d-$layer-b$batch" $((seconds + 120)) "$build/examples/tune_conv2d_cuda" --layer "$layer" \
      --batch "$batch" --tuner "$tuner" --budget 1000 --seconds "$seconds" \
      --log "$out/conv2d-$layer-b$batch.jsonl" --curve "$out/conv2d-$layer-b$batch.csv"
  done
else
  echo "=== tune_conv2d_cuda was not built (no cuDNN found at configuration)"
fi
exit $failed
