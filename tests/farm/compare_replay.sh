#!/usr/bin/env bash
# Runs tunekit-replay serially and on a farm with the same arguments and checks that both make
# the same trials: --out's columns but the tuning clock (single task: seed, trial, config, status,
# time_ms, best_time_ms, measure_seconds, score; multi-task: every column) must be identical.
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
# The single-task --out: all but column 7, the tuning clock (search time is wall time). The
# multi-task --out (seed, trial, slot, task, simulated seconds, objective, recorded objective) is
# simulated throughout.
if head -1 "$work/serial.csv" | grep -q '^seed,trial,slot,'; then cols=1-; else cols=1-6,8,9; fi
grep -q "measuring on" "$work/farm.txt" || { echo "the farm run did not measure on a farm:"; cat "$work/farm.txt"; exit 1; }
cut -d, -f"$cols" "$work/serial.csv" > "$work/serial.cut"
cut -d, -f"$cols" "$work/farm.csv" > "$work/farm.cut"
rows=$(($(wc -l < "$work/serial.cut") - 1))
[[ $rows -gt 0 ]] || { echo "the serial run made no trials"; exit 1; }
if cmp -s "$work/serial.cut" "$work/farm.cut"; then
  echo "same trials ($rows rows)"
else
  echo "TRIALS DIFFER"; diff "$work/serial.cut" "$work/farm.cut" | head -20; exit 1
fi
