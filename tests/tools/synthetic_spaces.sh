#!/usr/bin/env bash
# bench/synthetic_spaces.py: one small held-out space (2D convolution on simB, seed 3) is written
# twice byte-identically (another seed differs), is in the datasets' format (header, 32 samples,
# lexicographic unique rows, a few % failed), is not trivial (best >= 2x faster than the median)
# and loads in tunekit-replay; random search at budget 50 misses its optimum on most seeds.
#   synthetic_spaces.sh WORK_DIR PYTHON GENERATOR REPLAY
set -euo pipefail
work=$1 python=$2 gen=$3 replay=$4
"$python" -c "import numpy" 2>/dev/null || { echo "SKIP: $python has no numpy"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
args=(--family conv --device simB --count 1)
"$python" "$gen" "${args[@]}" --seed 3 --out "$work/a" > "$work/a.txt"
"$python" "$gen" "${args[@]}" --seed 3 --out "$work/b" > "$work/b.txt"
"$python" "$gen" "${args[@]}" --seed 4 --out "$work/c" > /dev/null
csv=$(ls "$work"/a/*.csv)
[[ $(ls "$work"/a/*.csv | wc -l) == 1 ]] || { echo "expected one CSV"; exit 1; }
cmp "$csv" "$work/b/$(basename "$csv")" || { echo "NOT DETERMINISTIC for the seed"; exit 1; }
if cmp -s "$csv" "$(ls "$work"/c/*.csv)"; then echo "seeds 3 and 4 gave the same space"; exit 1; fi
"$python" - "$csv" <<'PY'
import math, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
head = lines[0].split(",")
assert head[-2:] == ["time_ms", "samples"], head
n = len(head) - 2
rows = [l.split(",") for l in lines[1:]]
keys = [tuple(int(v) for v in r[:n]) for r in rows]
assert keys == sorted(keys) and len(set(keys)) == len(keys), "rows not lexicographic and unique"
times, failed = [], 0
for r in rows:
    assert len(r) == n + 2, r
    if r[n] == "inf":
        assert r[n + 1] == "", r
        failed += 1
        continue
    s = [float(x) for x in r[n + 1].split(";")]
    assert len(s) == 32 and all(x > 0 for x in s), r
    assert abs(statistics.fmean(s) - float(r[n])) <= 1e-4 * float(r[n]), r
    times.append(float(r[n]))
valid = len(rows)
assert 2000 <= valid <= 30000, valid
assert 0 < failed <= 0.1 * valid, failed
best, median = min(times), statistics.median(times)
assert median >= 2 * best, (best, median)
print(f"format ok: {valid} valid, {failed} failed, best {best} ms, median/best {median / best:.2f}")
PY
"$replay" --dataset "$csv" --tuner tpe-local --budget 50 --seeds 2 --quiet > "$work/tpe.txt" 2>&1 || {
  echo "tunekit-replay failed on the space:"; cat "$work/tpe.txt"; exit 1; }
"$replay" --dataset "$csv" --tuner random --budget 50 --seeds 8 --quiet --summary-json "$work/random.json" \
  > "$work/random.txt" 2>&1 || { echo "tunekit-replay (random) failed:"; cat "$work/random.txt"; exit 1; }
"$python" - "$work/random.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p75 = d["found_score_p75"]["50"]
assert p75 < 1.0, f"random search found the optimum at budget 50 on >= 25% of seeds (p75 {p75})"
print(f"random search at budget 50: found score median {d['found_score_median']['50']:.3f}, p75 {p75:.3f}")
PY
echo "synthetic space ok"
