#!/usr/bin/env bash
# The "Measurement" table of docs/benchmarks.md: AdaTune's pipeline replayed on the four recorded
# spaces (25 seeds, budget 200, plan size 32, no per-config overhead) measuring with
# Deterministic (32 runs), AdaptiveCV with the same ceiling (n = 32, B = 4) and AdaptiveCV with
# the paper's n = 500, B = 50 (the preset's). Prints the final score, trials and simulated
# measurement seconds to score 0.95, and the measurement seconds of the whole run, with no
# overhead and with 1 s per configuration added (every replayed trial costs the overhead once).
#
#   bench/measurement_replay.sh [OUT]     (after scripts/build.sh; about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/measurement_replay}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
replay=build/tools/tunekit-replay
mkdir -p "$out"
for name in gemm_RTX_3090 gemm_RTX_2080_Ti convolution_A100 convolution_A4000; do
  for ev in "det:--evaluator deterministic --repeat 32" "ada:--evaluator adaptive --max-runs 32 --batch 4" \
            "pre:--evaluator preset"; do
    tag=${ev%%:*}
    [[ -s $out/$tag-$name.csv ]] && continue
    # shellcheck disable=SC2086
    "$replay" --dataset "$datasets/$name.csv" --tuner adatune --budget 200 --seeds 25 --plan-size 32 \
      --overhead 0 --quiet ${ev#*:} --out "$out/$tag-$name.csv" > /dev/null 2>&1
  done
done
python3 - "$out" <<'PY'
import csv, math, pathlib, sys
out = pathlib.Path(sys.argv[1])
def median(v):  # numpy's default interpolation, infinity propagates
    v = sorted(v); pos = 0.5 * (len(v) - 1); lo, hi = math.floor(pos), math.ceil(pos)
    if v[lo] == v[hi] or math.isinf(v[hi]): return v[hi]
    return v[lo] + (pos - lo) * (v[hi] - v[lo])
f = lambda x: ">200" if math.isinf(x) else f"{x:.1f}"
names = {"det": "deterministic, 32 runs", "ada": "adaptive, n = 32, B = 4", "pre": "adaptive, n = 500, B = 50"}
print("| dataset | measurement | score at B = 200 | trials to 0.95 | seconds to 0.95 | with 1 s/config | seconds in all | with 1 s/config |")
print("|---|---|---|---|---|---|---|---|")
for name in ["gemm_RTX_3090", "gemm_RTX_2080_Ti", "convolution_A100", "convolution_A4000"]:
    for tag in ["det", "ada", "pre"]:
        seeds = {}
        for r in csv.DictReader(open(out / f"{tag}-{name}.csv")):
            seeds.setdefault(r["seed"], []).append(r)
        final, e95, t0, t1, all0, all1 = [], [], [], [], [], []
        for rows in seeds.values():
            final.append(float(rows[-1]["score"]))
            hit = next((i for i, r in enumerate(rows) if float(r["score"]) >= 0.95), None)
            e95.append(math.inf if hit is None else hit + 1)
            t0.append(math.inf if hit is None else float(rows[hit]["measure_seconds"]))
            t1.append(math.inf if hit is None else float(rows[hit]["measure_seconds"]) + hit + 1)
            all0.append(float(rows[-1]["measure_seconds"]))
            all1.append(float(rows[-1]["measure_seconds"]) + len(rows))
        print(f"| {name} | {names[tag]} | {median(final):.3f} | {f(median(e95))} | {f(median(t0))} | "
              f"{f(median(t1))} | {median(all0):.1f} | {median(all1):.1f} |")
PY
