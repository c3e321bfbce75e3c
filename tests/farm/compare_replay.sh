#!/usr/bin/env bash
# Runs tunekit-replay serially and on a farm with the same arguments and checks that both make
# the same trials: --out's columns but the tuning clock (seed, trial, config, status, time_ms,
# best_time_ms, measure_seconds, score) must be identical.
#   compare_replay.sh WORK_DIR REPLAY "LAUNCHER..." ARGS...
# LAUNCHER: the farm run's prefix ("mpirun -np 3 ...") or "" ; ARGS: tunekit-replay's arguments
# for both runs, then "--" and the farm run's extra arguments (--workers 3).
set -euo pipefail
work=$1 replay=$2 launcher=$3
shift 3
common=() extra=()
while [[ $# -gt 0 && $1 != -- ]]; do common+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
extra=("$@")
mkdir -p "$work"
"$replay" "${common[@]}" --quiet --out "$work/serial.csv" > "$work/serial.txt" 2>&1
# shellcheck disable=SC2086
$launcher "$replay" "${common[@]}" "${extra[@]}" --quiet --out "$work/farm.csv" > "$work/farm.txt" 2>&1 || {
  echo "the farm run failed:"; cat "$work/farm.txt"; exit 1; }
cut -d, -f1-6,8,9 "$work/serial.csv" > "$work/serial.cut"
cut -d, -f1-6,8,9 "$work/farm.csv" > "$work/farm.cut"
rows=$(($(wc -l < "$work/serial.cut") - 1))
[[ $rows -gt 0 ]] || { echo "the serial run made no trials"; exit 1; }
if cmp -s "$work/serial.cut" "$work/farm.cut"; then
  echo "same trials ($rows rows)"
else
  echo "TRIALS DIFFER"; diff "$work/serial.cut" "$work/farm.cut" | head -20; exit 1
fi
