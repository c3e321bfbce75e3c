#!/usr/bin/env bash
# Configs that hang on an MPI farm's worker rank are timed out there and the run goes on.
#   slow_rank.sh WORK_DIR REPLAY "MPIRUN..." SLEEP TIMEOUT ARGS...
# ARGS: tunekit-replay's arguments of a single-task replay with a tuner whose configs do not
# depend on the results (random), --overhead 0 and --seeds 1. The serial run measures without
# sleeping. The farm run sleeps SLEEP times each config's simulated seconds (--sleep) and gives
# its ranks --worker-timeout TIMEOUT: configs slept longer than that are killed in the rank's
# child process. The farm run must end, with the serial run's configs in the same order; each
# trial either the serial run's (status, time) or a timeout; at least one of each.
set -euo pipefail
work=$1 replay=$2 launcher=$3 sleep=$4 timeout=$5
shift 5
args=("$@")
rm -rf "$work"
mkdir -p "$work"
"$replay" "${args[@]}" --quiet --out "$work/serial.csv" > "$work/serial.txt" 2>&1
# shellcheck disable=SC2086
$launcher "$replay" "${args[@]}" --sleep "$sleep" --worker-timeout "$timeout" --quiet --out "$work/farm.csv" \
  > "$work/farm.txt" 2>&1 || { echo "the farm run failed:"; cat "$work/farm.txt"; exit 1; }
python3 - "$work/serial.csv" "$work/farm.csv" << 'EOF'
import csv, sys
serial = list(csv.DictReader(open(sys.argv[1])))
farm = list(csv.DictReader(open(sys.argv[2])))
if len(farm) != len(serial) or not serial:
    sys.exit(f"the farm run has {len(farm)} trials, the serial run {len(serial)}")
timeouts = 0
for i, (s, f) in enumerate(zip(serial, farm)):
    if f["config"] != s["config"]:
        sys.exit(f"trial {i + 1}: config {f['config']}, the serial run's {s['config']}")
    if f["status"] == "timeout":
        timeouts += 1
    elif (f["status"], f["time_ms"]) != (s["status"], s["time_ms"]):
        sys.exit(f"trial {i + 1}: {f['status']} {f['time_ms']} ms, the serial run's {s['status']} {s['time_ms']} ms")
if timeouts == 0 or timeouts == len(farm):
    sys.exit(f"{timeouts} of {len(farm)} trials timed out: the test needs some of each")
print(f"same trials but {timeouts} timed out of {len(farm)}")
EOF
