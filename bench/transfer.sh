#!/usr/bin/env bash
# Transfer between devices on the recorded GPU spaces (docs/benchmarks.md, "Transfer"): each
# target replayed cold (tpe) and with the other device's recorded space as source by each
# --transfer-method (tunekit, autotvm, top-first), then with a wrong source (the right one with its
# times shuffled among its rows), and bench/transfer_found.py's table of each run: mean found
# score at B = 5 .. 200 and the median e95.
#
#   bench/transfer.sh [OUT]          (after building tunekit-replay; SEEDS=20 BUDGET=200 by default)
#
# A run whose --out file exists is skipped, so a stopped run resumes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/transfer}
replay=${TUNEKIT_REPLAY:-build/tools/tunekit-replay}
data=${TUNEKIT_DATASETS:-../shared/datasets}
seeds=${SEEDS:-20}
budget=${BUDGET:-200}
mkdir -p "$out"
export OMP_NUM_THREADS=1

# target:source pairs, one device's space the other's source
pairs="gemm_RTX_3090:gemm_RTX_2080_Ti gemm_RTX_2080_Ti:gemm_RTX_3090 convolution_A4000:convolution_A100
       convolution_A100:convolution_A4000"
shuffled() {  # $1: a recorded space; writes it with its time_ms column shuffled (seed 1)
  /usr/bin/python3 - "$data/$1.csv" "$out/$1_shuffled.csv" <<'EOF'
import csv, random, sys
with open(sys.argv[1]) as f:
    rows = list(csv.reader(f))
head, body = rows[0], rows[1:]
ti = head.index("time_ms")
times = [r[ti] for r in body]
random.Random(1).shuffle(times)
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(head)
    for r, t in zip(body, times):
        w.writerow(r[:ti] + [t] + r[ti + 1:])
EOF
}
run() {  # out-name, then tunekit-replay's arguments
  local name=$1
  shift
  [[ -s $out/$name.csv ]] && return
  "$replay" --budget "$budget" --seeds "$seeds" --quiet --out "$out/$name.tmp" "$@" >/dev/null
  mv "$out/$name.tmp" "$out/$name.csv"
}
for p in $pairs; do
  target=${p%%:*} source=${p##*:}
  run "cold_$target" --dataset "$data/$target.csv" --tuner tpe
  for m in tunekit autotvm top-first; do
    run "${m}_right_$target" --dataset "$data/$target.csv" --transfer "$data/$source.csv" --transfer-method "$m"
  done
  if [[ $target == gemm* ]]; then
    [[ -s $out/${source}_shuffled.csv ]] || shuffled "$source"
    for m in tunekit autotvm top-first; do
      run "${m}_shuffled_$target" --dataset "$data/$target.csv" --transfer "$out/${source}_shuffled.csv" --transfer-method "$m"
    done
  fi
done
for p in $pairs; do
  target=${p%%:*}
  echo "== $target"
  /usr/bin/python3 bench/transfer_found.py "$data/$target.csv" "$out"/*_"$target".csv
done
