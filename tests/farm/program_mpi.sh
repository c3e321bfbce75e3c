#!/usr/bin/env bash
# A tuning program under mpirun (tune_gemm): rank 0 tunes, writes the log and prints; the other
# ranks measure for it. With random search, whose configs do not depend on the times measured,
# the log holds the serial run's configs in the serial run's order, each measured on a worker
# rank (measured_on.device rank:1 .. rank:N-1), and the program prints its comparison once.
#   program_mpi.sh WORK_DIR PROGRAM "MPIRUN -n 3 [flags]" RANKS
set -euo pipefail
work=$1 program=$2 mpirun=$3 ranks=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
args=(--size 64 --threads 1 --tuner random --budget 24 --seconds 120 --seed 5)
"$program" "${args[@]}" --log serial.jsonl --curve serial.csv >serial.txt 2>&1 || { cat serial.txt; exit 1; }
# shellcheck disable=SC2086 # the launcher and its flags are words
$mpirun "$program" "${args[@]}" --log mpi.jsonl --curve mpi.csv >mpi.txt 2>&1 || { cat mpi.txt; exit 1; }
grep -q "measuring on $((ranks - 1)) MPI ranks" mpi.txt || { echo "the run did not say it measured on MPI ranks:"; cat mpi.txt; exit 1; }
[[ $(grep -c "^tunekit, tuned" mpi.txt) == 1 ]] || { echo "expected one comparison, from rank 0:"; cat mpi.txt; exit 1; }
/usr/bin/python3 - serial.jsonl mpi.jsonl "$ranks" <<'PY'
import json, sys
serial = [json.loads(l) for l in open(sys.argv[1])]
mpi = [json.loads(l) for l in open(sys.argv[2])]
ranks = int(sys.argv[3])
assert len(serial) == 24 and len(mpi) == 24, (len(serial), len(mpi))
assert [r["config"] for r in serial] == [r["config"] for r in mpi], "other configs or order under mpirun"
devices = {r.get("measured_on", {}).get("device") for r in mpi}
assert devices <= {f"rank:{k}" for k in range(1, ranks)} and devices, devices
assert all(r["status"] == "ok" for r in mpi), [r["status"] for r in mpi]
print(f"same configs as the serial run, measured on {sorted(devices)}")
PY
echo "program under mpirun ok"
