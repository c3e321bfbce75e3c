#!/usr/bin/env bash
# The main job: tune tunekit's OpenMP SGEMM at 1024^3 on this machine (tunekit's search,
# tpe, every configuration verified), then compare the best with OpenBLAS and Eigen
# in the same process.
# Writes tune_gemm.jsonl (the tuning log) and tune_gemm_curve.csv in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --target tune_gemm
cd build
exec examples/tune_gemm "$@"
