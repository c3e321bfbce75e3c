#!/usr/bin/env bash
# The measurement farm's throughput (docs/farm.md, docs/benchmarks.md): tunekit-replay with random
# search (no model: the tuning process's own time is negligible) on gemm_RTX_3090, every config
# sleeping for SLEEP x its simulated seconds (no per-config overhead; 4 recorded runs, about 76 ms
# of sleep per config at SLEEP 1), serially and with W = 1, 2, 4, 8 local workers. Prints the
# configs per second and their ratio to the serial run (sleep-bound: ideally W). Then, with no
# sleep, the farm's overhead: per config (round trips over the socket, encoding; the difference
# between farm and serial wall time growing with the configs) in microseconds, and per run
# (forking the workers and reaping them) in milliseconds.
#
#   bench/farm_throughput.sh [BUDGET] [SLEEP]     (after building tunekit-replay; ~20 s)
# Run it on an idle machine: it measures wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
budget=${1:-128}
sleep_scale=${2:-0.5}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
replay=${REPLAY:-build/tools/tunekit-replay}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
wall() {  # wall seconds of one run with the given extra arguments
  "$replay" --dataset "$datasets/gemm_RTX_3090.csv" --tuner random --budget "$budget" --plan-size 64 \
    --seeds 1 --overhead 0 --quiet --summary-json "$tmp/s.json" "$@" > /dev/null 2>&1
  sed -n 's/.*"wall_seconds_per_run": *\([0-9.e+-]*\).*/\1/p' "$tmp/s.json"
}
echo "configs: $budget, plan size 64, sleep x$sleep_scale; $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
serial=$(wall --sleep "$sleep_scale")
printf "%-8s %10s %12s %10s\n" workers "wall s" "configs/s" "vs serial"
awk -v w=serial -v t="$serial" -v n="$budget" 'BEGIN { printf "%-8s %10.3f %12.1f %10.2f\n", w, t, n / t, 1 }'
for w in 1 2 4 8; do
  t=$(wall --sleep "$sleep_scale" --workers "$w")
  awk -v w="$w" -v t="$t" -v s="$serial" -v n="$budget" \
    'BEGIN { printf "%-8s %10.3f %12.1f %10.2f\n", w, t, n / t, s / t }'
done
echo "farm overhead (no sleep; median of 3 runs each): per config from the runs of $budget and $((4 * budget))"
echo "configs, the rest per run (forking and reaping the workers):"
median3() { printf "%s\n" "$@" | sort -g | sed -n 2p; }
wall_of() {  # median wall seconds of 3 runs with budget $1 and the other arguments
  local b=$1; shift
  median3 "$(budget=$b wall "$@")" "$(budget=$b wall "$@")" "$(budget=$b wall "$@")"
}
s1=$(wall_of "$budget")
s4=$(wall_of $((4 * budget)))
for w in 1 2 4 8; do
  f1=$(wall_of "$budget" --workers "$w")
  f4=$(wall_of $((4 * budget)) --workers "$w")
  awk -v w="$w" -v s1="$s1" -v s4="$s4" -v f1="$f1" -v f4="$f4" -v n="$budget" 'BEGIN {
    per = ((f4 - f1) - (s4 - s1)) / (3 * n); start = (f1 - s1) - n * per
    printf "  %d workers: %.1f us per config, %.2f ms per run\n", w, per * 1e6, start * 1e3 }'
done
