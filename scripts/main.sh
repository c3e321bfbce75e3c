#!/usr/bin/env bash
# The main job: replays random search on the recorded RTX 3090 SGEMM tuning space (17956 configs
# measured on the GPU) over 25 seeds and prints the search efficiency per budget.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh --target tunekit-replay
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
exec build/tools/tunekit-replay --dataset "$datasets/gemm_RTX_3090.csv" --tuner random \
  --budget 400 --seeds 25 --flop 137472507904 --quiet --summary-json build/summary.json "$@"
