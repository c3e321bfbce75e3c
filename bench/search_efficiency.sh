#!/usr/bin/env bash
# The search-efficiency tables of docs/benchmarks.md: tuner presets on every recorded space of
# shared/datasets, replayed with tunekit-replay (25 seeds, budget 400), side by side with the best
# peer of shared/datasets/PEERS.md in each cell. Writes one summary JSON per run under OUT and
# prints, per space, the found score (PEERS.md's: the best measured config) at B = 25 ... 400, the
# median measurements to 0.95 and 0.99 of it, the held score (the tuner's own pick by its noisy
# measurements) at 100 and 400, and P (mean time score over the seeds, docs/benchmarks.md); then
# how many of the 20 cells each tuner is level with or above the best peer (at PEERS.md's
# precision: within 0.0005).
#
#   bench/search_efficiency.sh [OUT]      (after scripts/build.sh)
#   TUNERS="tpe-local autotvm" PLANS="32" bench/search_efficiency.sh OUT   (a subset)
#   TUNEKIT_DATASETS=DIR [TUNEKIT_PEERS=FILE.md] bench/search_efficiency.sh OUT
#     (other spaces: the datasets (*.csv) and Kernel Tuner caches (*.json) of DIR, gzipped or not
#     (*.csv.gz, *.json.gz, as benchmark_hub's caches), against the peers of DIR/PEERS.md or of
#     FILE.md, e.g. bench/synthetic_peers.md for bench/synthetic_spaces.py --seed 3030 --count 8,
#     or a PEERS.md that bench/kt_peers.py and bench/optuna_peers.py wrote for the caches)
#
# Every preset at plan sizes 64 and 32 takes about an hour on 2 cores (55 min beside two builds;
# the forest pipelines' search is most of it); tpe-local alone takes seconds. The runs are deterministic: a seed gives
# the same trace on any machine and thread count (P also counts the search's own time, so it
# varies a little between machines).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/search_efficiency}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
replay=build/tools/tunekit-replay
tuners=${TUNERS:-tpe-local tpe-gp tpe-gp-rf tpe-gp-rf-restarts random autotvm rfei-sa rfei-csa adatune chameleon sa-as ppo}
plans=${PLANS:-64 32}
mkdir -p "$out"
shopt -s nullglob
spaces=("$datasets"/*.csv "$datasets"/*.csv.gz "$datasets"/*.json "$datasets"/*.json.gz)
[[ ${#spaces[@]} -gt 0 ]] || { echo "search_efficiency: no recorded space in $datasets" >&2; exit 2; }
for space in "${spaces[@]}"; do
  name=$(basename "$space" .gz)
  name=${name%.*}
  for plan in $plans; do
    for tuner in $tuners; do
      # random search and the tpe-* presets choose their own batches: one run, at plan size 64.
      if [[ ($tuner == random || $tuner == tpe-*) && $plan != 64 ]]; then continue; fi
      json="$out/$name-$tuner-$plan.json"
      [[ -s $json ]] && continue
      "$replay" --dataset "$space" --tuner "$tuner" --plan-size "$plan" --budget 400 --seeds 25 \
        --quiet --summary-json "$json" > /dev/null
    done
  done
done
/usr/bin/python3 - "$out" "${TUNEKIT_PEERS:-$datasets/PEERS.md}" <<'PY'
import json, pathlib, re, sys
out, peers_md = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
budgets = ("25", "50", "100", "200", "400")
# The best peer per space and budget (random search excluded), from PEERS.md's tables.
best, space = {}, None
if peers_md.exists():
    for line in peers_md.read_text().splitlines():
        if m := re.match(r"## (\S+)", line):
            space = m.group(1)
            best[space] = [0.0] * 5
        elif space and line.startswith("| ") and not line.startswith(("| strategy", "| random")):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            best[space] = [max(b, float(c)) for b, c in zip(best[space], cells[2:7])]
runs = [json.loads(p.read_text()) | {"file": p.stem} for p in sorted(out.glob("*.json"))]
def fmt(v):
    return ">400" if v is None else f"{v:.0f}"
level = {}
for ds in sorted({r["dataset"] for r in runs}):
    name = re.sub(r"\.(csv|json)(\.gz)?$", "", ds)
    print(f"\n#### {name}\n")
    print("| tuner | plan | B=25 | B=50 | B=100 | B=200 | B=400 | e95 | e99 | held 100 | held 400 | P |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    if name in best:
        print("| best peer (PEERS.md) | - | " + " | ".join(f"{x:.3f}" for x in best[name]) + " | | | | | |")
    for r in sorted((r for r in runs if r["dataset"] == ds), key=lambda r: (r["file"].split("-")[-1], r["tuner"]), reverse=True):
        plan = r["file"].split("-")[-1]
        f = r.get("found_score_median", r["score_median"])
        cells = " | ".join(f"{f[b]:.3f}" for b in budgets)
        if name in best:
            key = f"{r['tuner']} (plan {plan})"
            # PEERS.md gives its medians to 3 decimals: a cell is level when it is too at that
            # precision (convolution_A100's 0.931 at B = 100 is the score 0.930858 of one config,
            # which a tuner holding that same config must not be counted below).
            level[key] = level.get(key, 0) + sum(f[b] >= x - 5e-4 for b, x in zip(budgets, best[name]))
        p = f"{r['time_score']['mean']:.3f}" if "time_score" in r else "-"
        print(f"| {r['tuner']} | {'-' if r['tuner'] == 'random' or r['tuner'].startswith('tpe-') else plan} | {cells} | "
              f"{fmt(r.get('found_evals_to_95_median', r['evals_to_95_median']))} | "
              f"{fmt(r.get('found_evals_to_99_median', r['evals_to_99_median']))} | "
              f"{r['score_median']['100']:.3f} | {r['score_median']['400']:.3f} | {p} |")
if level:
    print("\nCells (of 5 budgets x spaces) level with or above the best peer:")
    for k, v in sorted(level.items(), key=lambda kv: -kv[1]):
        print(f"- {k}: {v}")
PY
