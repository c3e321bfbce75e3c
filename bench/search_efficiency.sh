#!/usr/bin/env bash
# The search-efficiency table of docs/performance.md: every tuner preset on every recorded space
# of shared/datasets, replayed with tunekit-replay (25 seeds, budget 400), at plan sizes 64
# (AutoTVM's default) and 32. Writes one summary JSON per run under OUT and prints the markdown
# table (median score at B = 25, 50, 100, 200, 400; median evaluations to 0.95 and 0.99; P: mean
# time score over the seeds, docs/performance.md).
#
#   bench/search_efficiency.sh [OUT]      (after scripts/build.sh; about two hours on 2 cores)
#
# The runs are deterministic: a seed gives the same trace on any machine and thread count.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/search_efficiency}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
replay=build/tools/tunekit-replay
mkdir -p "$out"
for csv in "$datasets"/*.csv; do
  name=$(basename "$csv" .csv)
  for plan in 64 32; do
    for tuner in random autotvm rfei-sa rfei-csa adatune chameleon sa-as ppo; do
      if [[ $tuner == random && $plan == 32 ]]; then continue; fi
      json="$out/$name-$tuner-$plan.json"
      [[ -s $json ]] && continue
      "$replay" --dataset "$csv" --tuner "$tuner" --plan-size "$plan" --budget 400 --seeds 25 \
        --quiet --summary-json "$json" > /dev/null
    done
  done
done
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
runs = [json.loads(p.read_text()) | {"file": p.stem} for p in sorted(out.glob("*.json"))]
def fmt(v):
    return ">400" if v is None else f"{v:.0f}"
for ds in sorted({r["dataset"] for r in runs}):
    print(f"\n#### {ds.removesuffix('.csv')}\n")
    print("| tuner | plan | B=25 | B=50 | B=100 | B=200 | B=400 | e95 | e99 | P |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted((r for r in runs if r["dataset"] == ds), key=lambda r: r["file"].split("-")[-1], reverse=True):
        plan = r["file"].split("-")[-1]
        m = r["score_median"]
        cells = " | ".join(f"{m[b]:.3f}" for b in ("25", "50", "100", "200", "400"))
        p = f"{r['time_score']['mean']:.3f}" if "time_score" in r else "-"  # summaries before P: -
        print(f"| {r['tuner']} | {plan if r['tuner'] != 'random' else '-'} | {cells} | "
              f"{fmt(r['evals_to_95_median'])} | {fmt(r['evals_to_99_median'])} | {p} |")
PY
