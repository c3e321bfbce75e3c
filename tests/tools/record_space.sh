#!/usr/bin/env bash
# examples/record_space: a small part of the SGEMM's space (16 configs of a 64^3 product, a
# micro-kernel shape that every vector width has) recorded
# on this machine is in the datasets' format (header, one lexicographic row per selected config,
# --samples samples whose mean is time_ms), loads in tunekit-replay as 16 configs, and grid search
# over it reaches its recorded best; a recording started again on the finished file measures nothing. Bad --only
# arguments end with a message, and so does --kernel cuda-gemm without a GPU. Every space in
# bench/recorded and its subfolders loads in tunekit-replay.
#   record_space.sh WORK_DIR RECORD_SPACE REPLAY PYTHON RECORDED_DIR
set -euo pipefail
work=$1 record=$2 replay=$3 python=$4 recorded=$5
rm -rf "$work" && mkdir -p "$work"
only=(--only mr=4 --only nr=16 --only mc=48,96 --only nc=64,128 --only kc=64 --only pack_a=1
      --only parallel=ic --only schedule=static --only unroll=1,4)
"$record" --kernel gemm --size 64 --threads 1 --samples 3 --out "$work/g.csv" "${only[@]}" > "$work/log.txt"
grep -q "16 selected" "$work/log.txt" || { echo "expected 16 selected configs:"; cat "$work/log.txt"; exit 1; }
"$python" - "$work/g.csv" <<'PY'
import math, sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0].split(",")
assert head == ["mr", "nr", "mc", "nc", "kc", "pack_a", "pack_b", "parallel", "schedule", "unroll", "time_ms",
                "samples"], head
rows = [l.split(",") for l in lines[1:]]
assert len(rows) == 16, len(rows)
keys = [tuple(int(v) for v in r[:10]) for r in rows]
assert keys == sorted(keys) and len(set(keys)) == 16, "rows not lexicographic and unique"
for k, r in zip(keys, rows):
    assert k[0] == 4 and k[1] == 16 and k[2] in (48, 96) and k[3] in (64, 128) and k[4] == 64, k
    assert k[5] == 1 and k[7] == 1 and k[8] == 0 and k[9] in (1, 4), k  # parallel ic = 1, static = 0
    s = [float(x) for x in r[11].split(";")]
    assert len(s) == 3 and all(x > 0 for x in s), r
    assert abs(sum(s) / 3 - float(r[10])) <= 1e-6 * float(r[10]), r
print("format ok")
PY
"$replay" --dataset "$work/g.csv" --tuner grid --budget 16 --seeds 1 --quiet --summary-json "$work/grid.json" \
  > "$work/grid.txt" 2>&1 || { echo "tunekit-replay failed on the recording:"; cat "$work/grid.txt"; exit 1; }
grep -q "16 recorded configs (0 failed) of 16" "$work/grid.txt" || { echo "unexpected space:"; cat "$work/grid.txt"; exit 1; }
"$python" - "$work/grid.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
# Grid search measures all 16, so its found score reaches 1 (the recorded best) within them.
assert s["found_evals_to_99_median"] is not None and s["found_evals_to_99_median"] <= 16, s
print("grid search over the recording finds its best")
PY
cp "$work/g.csv" "$work/before.csv"
"$record" --kernel gemm --size 64 --threads 1 --samples 3 --out "$work/g.csv" "${only[@]}" > /dev/null
cmp "$work/g.csv" "$work/before.csv" || { echo "a finished recording changed when started again"; exit 1; }
for bad in "--only foo=1" "--only mc=5" "--only mc"; do
  # shellcheck disable=SC2086
  if "$record" --kernel gemm --size 64 --dry-run $bad > "$work/bad.txt" 2>&1; then
    echo "record_space accepted $bad"; exit 1
  fi
  grep -q "^record_space: --only" "$work/bad.txt" || { echo "no message for $bad:"; cat "$work/bad.txt"; exit 1; }
done
# The CUDA kernels: without a GPU (or in a build without CUDA) a message, not a crash.
if ! "$record" --kernel cuda-gemm --size 64 --dry-run > "$work/cuda.txt" 2>&1; then
  grep -q "^record_space: " "$work/cuda.txt" || { echo "no message for --kernel cuda-gemm:"; cat "$work/cuda.txt"; exit 1; }
fi
shopt -s nullglob
for csv in "$recorded"/*.csv "$recorded"/*/*.csv; do
  "$replay" --dataset "$csv" --tuner random --budget 10 --seeds 1 --quiet > "$work/r.txt" 2>&1 ||
    { echo "tunekit-replay failed on $csv:"; cat "$work/r.txt"; exit 1; }
done
echo "record_space ok"
