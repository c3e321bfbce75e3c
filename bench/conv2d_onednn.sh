#!/usr/bin/env bash
# The tuned conv2d against oneDNN on the ResNet-18 layers, as docs/benchmarks.md measures it: each
# layer tuned once with tune_conv2d, then compared with oneDNN three times from the same log, each
# time in a new process (--resume replays the tuning and times the same best configuration again),
# in turns each time; prints the median of the three comparisons per layer. The tuning process's
# own comparison is left out (it stays in C<layer>.tune.txt): a process that has run 1500
# configurations is not the one a user runs the tuned kernel in, and there oneDNN's strided 1x1
# convolutions ran slower than in the new processes in 11 of 16 tries and its stride-1 one (C3)
# faster in 3 of 3 (git show a1c316f:docs/performance.md, "More AVX2 runs"). The passes are
# spread over the run (every layer tuned, then every layer's first comparison, then every layer's
# second, then every layer's third), so that one slow spell of the machine, which can last tens
# of seconds on a VM, falls in one comparison of a layer rather than in all three. Run it on a
# quiet machine: nothing else may run beside it.
#
#   bench/conv2d_onednn.sh [BUILD_DIR]        default build
#   LAYERS="3 5 8" TUNER=autotvm BUDGET=1500 SECONDS_PER_LAYER=60 RUNS=51 SEED=1 OUT=DIR bench/conv2d_onednn.sh build-avx2
#
# For the AVX2 path on an AVX-512 host, use a -DTUNEKIT_MARCH=x86-64-v3 build and cap oneDNN:
# ONEDNN_MAX_CPU_ISA=AVX2 (docs/benchmarks.md, "CPU conv2d against oneDNN").
set -euo pipefail
build=${1:-build}
program="$build/examples/tune_conv2d"
[[ -x $program ]] || { echo "conv2d_onednn: $program not built (cmake --build $build --target tune_conv2d)" >&2; exit 2; }
layers=${LAYERS:-1 2 3 4 5 6 7 8 9 10 11 12}
tuner=${TUNER:-autotvm}
budget=${BUDGET:-1500}
seconds=${SECONDS_PER_LAYER:-60}
runs=${RUNS:-51}
seed=${SEED:-1}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "conv2d_onednn: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
  "tuner $tuner, budget $budget, $seconds s, $runs runs per comparison, seed $seed; logs in $out"
printf '| layer | tunekit GFLOPS | oneDNN GFLOPS | vs oneDNN | ratios | oneDNN kernel |\n|---|---|---|---|---|---|\n'
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
args_of() {
  args=(--layer "$1" --tuner "$tuner" --budget "$budget" --seconds "$seconds" --runs "$runs" --seed "$seed"
        --log "$out/C$1.jsonl" --curve "$out/C${1}_curve.csv")
}
for layer in $layers; do
  args_of "$layer"
  echo "conv2d_onednn: tuning C$layer" >&2
  "$program" "${args[@]}" >"$out/C$layer.tune.txt" 2>&1
  : >"$out/C$layer.txt"
done
for pass in 1 2 3; do
  for layer in $layers; do
    args_of "$layer"
    echo "conv2d_onednn: comparison $pass, C$layer" >&2
    "$program" "${args[@]}" --resume >>"$out/C$layer.txt" 2>&1
  done
done
for layer in $layers; do
  # Rows: "tunekit conv2d, tuned  ms GFLOPS ratio" and "oneDNN x.y KERNEL  ms GFLOPS 1.00".
  ratios=$(awk '/^tunekit conv2d, tuned/ {print $(NF)}' "$out/C$layer.txt")
  ours=$(awk '/^tunekit conv2d, tuned/ {print $(NF-1)}' "$out/C$layer.txt" | median)
  theirs=$(awk '/^oneDNN [0-9]/ {print $(NF-1)}' "$out/C$layer.txt" | median)
  kernel=$(awk '/^oneDNN [0-9]/ {print $3; exit}' "$out/C$layer.txt")
  printf '| C%s | %s | %s | %s | %s | %s |\n' "$layer" "$ours" "$theirs" "$(echo "$ratios" | median)" \
    "$(echo $ratios | tr ' ' '/')" "$kernel"
done
