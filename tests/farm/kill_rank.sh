#!/usr/bin/env bash
# A measuring rank of an MPI farm killed (SIGKILL) mid-run: no record is lost, and --resume ends
# the run exactly as the serial run.
#   kill_rank.sh WORK_DIR REPLAY "MPIRUN..." ARGS...
# MPIRUN: the launcher with its rank count ("mpirun -n 3 ..."); ARGS: tunekit-replay's arguments
# of a single-task replay with --seeds 1 (--log needs it).
# 1. The serial run, with its log.
# 2. The farm run, slowed down (--sleep 0.2: 0.05 let a run on a loaded machine, with other tests
#    compiling beside it, reach its end before rank 1 was found and killed), with --log: once the
#    log holds a quarter of the budget,
#    rank 1 gets SIGKILL. Open MPI then aborts the whole job (MPI's default error handler; the
#    other ranks get SIGTERM): the run must fail, mpirun must say why, and the log must hold
#    every record told before the kill, each the serial run's record of that trial (config,
#    status, samples, cost), made on a worker rank (measured_on).
# 3. The same farm run with --resume: it takes the log's records, measures the rest, and its
#    trials (--out) and final log are the serial run's.
set -euo pipefail
work=$1 replay=$2 launcher=$3
shift 3
args=("$@")
budget=$(sed -n 's/.*--budget \([0-9]*\).*/\1/p' <<< "${args[*]}")
[[ -n $budget ]] || { echo "kill_rank.sh: ARGS need --budget N"; exit 2; }
rm -rf "$work"
mkdir -p "$work"
"$replay" "${args[@]}" --quiet --log "$work/serial.jsonl" --out "$work/serial.csv" > "$work/serial.txt" 2>&1

# shellcheck disable=SC2086
$launcher "$replay" "${args[@]}" --sleep 0.2 --quiet --log "$work/run.jsonl" --out "$work/killed.csv" \
  > "$work/killed.txt" 2>&1 &
launcher_pid=$!
trap 'kill "$launcher_pid" 2> /dev/null || true' EXIT  # should the test fail with the job running
records() { if [[ -f $1 ]]; then wc -l < "$1"; else echo 0; fi; }
# Waits (at most 30 s) until the log holds $1 records or the job has ended.
wait_for_records() {
  for _ in $(seq 600); do
    [[ $(records "$work/run.jsonl") -ge $1 ]] && return 0
    kill -0 "$launcher_pid" 2> /dev/null || return 0
    sleep 0.05
  done
}
# Rank 1: the process under the launcher (its child, or a proxy's) whose environment says so
# (Open MPI, or PMI's launchers); read from /proc with builtins, so that no other job's rank 1
# is taken. Found once the run has begun, so that the kill waits for nothing but the records.
parent_of() {
  local stat
  read -r stat < "/proc/$1/stat" 2> /dev/null || { echo 0; return; }
  stat=${stat##*) }  # after the command name, which may hold spaces: state, ppid, ...
  read -r _ ppid _ <<< "$stat"
  echo "$ppid"
}
under_launcher() {
  local p=$1
  while [[ $p -gt 1 ]]; do
    p=$(parent_of "$p")
    [[ $p -eq $launcher_pid ]] && return 0
  done
  return 1
}
wait_for_records 1
victim=
for dir in /proc/[0-9]*; do
  pid=${dir#/proc/}
  under_launcher "$pid" || continue
  if tr '\0' '\n' < "$dir/environ" 2> /dev/null | grep -qxE '(OMPI_COMM_WORLD_RANK|PMI_RANK)=1'; then
    victim=$pid
  fi
done
[[ -n $victim ]] || { echo "no rank 1 under the launcher"; cat "$work/killed.txt"; exit 1; }
wait_for_records $((budget / 4))
kill -KILL "$victim"
at_kill=$(records "$work/run.jsonl")
rc=0
wait "$launcher_pid" || rc=$?
told=$(records "$work/run.jsonl")
echo "rank 1 (pid $victim) killed with $at_kill records in the log; the job exited with $rc, $told records"
[[ $rc -ne 0 ]] || { echo "the farm run went on to its end after the kill"; exit 1; }
grep -qiE 'signal 9|killed' "$work/killed.txt" || { echo "no word of the kill:"; cat "$work/killed.txt"; exit 1; }
[[ $told -ge $at_kill && $told -gt 0 && $told -lt $budget ]] || { echo "not a run stopped mid-way"; exit 1; }

# The log's records are the serial run's first ones; those made by the farm run name a worker rank.
check_log() {
  python3 - "$work/serial.jsonl" "$work/run.jsonl" << 'EOF'
import json, sys
keys = ("task", "config", "status", "samples", "mean", "std", "cost", "error")
serial = [json.loads(line) for line in open(sys.argv[1])]
farm = [json.loads(line) for line in open(sys.argv[2])]
if len(farm) > len(serial):
    sys.exit(f"the log has {len(farm)} records, the serial run {len(serial)}")
for i, (s, f) in enumerate(zip(serial, farm)):
    if any(s.get(k) != f.get(k) for k in keys):
        sys.exit(f"record {i} differs from the serial run's: {f} != {s}")
    if not f.get("measured_on", {}).get("device", "").startswith("rank:"):
        sys.exit(f"record {i} was not measured on a worker rank: {f}")
print(f"the log's {len(farm)} records are the serial run's first {len(farm)}")
EOF
}
check_log

# shellcheck disable=SC2086
$launcher "$replay" "${args[@]}" --quiet --log "$work/run.jsonl" --resume --out "$work/resumed.csv" \
  > "$work/resumed.txt" 2>&1 || { echo "the resumed run failed:"; cat "$work/resumed.txt"; exit 1; }
grep -q "resuming: $told measurements" "$work/resumed.txt" || {
  echo "the resumed run did not take the $told logged records:"; cat "$work/resumed.txt"; exit 1; }
[[ $(records "$work/run.jsonl") -eq $(records "$work/serial.jsonl") ]] || {
  echo "the final log has $(records "$work/run.jsonl") records, the serial run's $(records "$work/serial.jsonl")"; exit 1; }
check_log
# All of --out but column 7, the tuning clock (wall time).
cut -d, -f1-6,8,9 "$work/serial.csv" > "$work/serial.cut"
cut -d, -f1-6,8,9 "$work/resumed.csv" > "$work/resumed.cut"
if cmp -s "$work/serial.cut" "$work/resumed.cut"; then
  echo "same trials after the resume ($(($(wc -l < "$work/serial.cut") - 1)) rows)"
else
  echo "TRIALS DIFFER"; diff "$work/serial.cut" "$work/resumed.cut" | head -20; exit 1
fi
