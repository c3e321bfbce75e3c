#!/usr/bin/env bash
# The multi-task table of docs/benchmarks.md: the four recorded spaces of shared/datasets as four
# operators of one model (weight 1 each, the FLOP of shared/datasets/README.md), tuned by
# TUNER (default random search) per task in slots of SLOT trials (16), BUDGET trials in all
# (800), seeds 0 .. SEEDS-1 (9), once per scheduler. Writes each run's summary JSON and
# objective CSV under OUT and prints the markdown table: per scheduler the median final
# objective as measured (each task's best measured latency: biased low by the draws) and as
# recorded (the held configs at their recorded means), and the median simulated measurement
# seconds until the recorded objective is within 1.05x and 1.01x of the datasets' optimum
# (tunekit-replay's summary; "never": not reached by half the runs), how many runs reach 1.01x,
# and the seconds to 1.05x and 1.01x of a reference common to all runs (the median final
# recorded objective of every run of every scheduler: random search per task reaches no level
# of the optimum's). With CONFIRM=K (default 0: none) every run ends by measuring each task's K
# fastest configs again (tunekit-replay --confirm K: 3 turns, the fastest by them kept), and a
# second table gives per scheduler the recorded objective of the confirmed configs, how many runs
# it puts within 1.01x of the optimum, and the simulated seconds the confirmation took.
#
#   bench/multitask_replay.sh [OUT]       (after scripts/build.sh; about a minute with random)
#   TUNER=autotvm BUDGET=800 bench/multitask_replay.sh build/multitask_autotvm
#   (TUNEKIT_REPLAY: another build's tunekit-replay, e.g. a scratch build's)
#
# The runs are deterministic: the timeline is simulated measurement seconds, which a seed
# reproduces on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/multitask_replay}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
replay=${TUNEKIT_REPLAY:-build/tools/tunekit-replay}
tuner=${TUNER:-random}
budget=${BUDGET:-800}
slot=${SLOT:-16}
seeds=${SEEDS:-9}
confirm=${CONFIRM:-0}
mkdir -p "$out"
for scheduler in sequential round-robin random flop bandit bandit-epsilon bandit-softmax gradient; do
  json="$out/$scheduler.json"
  [[ -s $json ]] && continue
  nice -n 19 "$replay" --dataset "$datasets/convolution_A100.csv" --dataset "$datasets/convolution_A4000.csv" \
    --dataset "$datasets/gemm_RTX_2080_Ti.csv" --dataset "$datasets/gemm_RTX_3090.csv" \
    --flops 7549747200,7549747200,137472507904,137472507904 \
    --scheduler "$scheduler" --tuner "$tuner" --plan-size "$slot" --slot "$slot" --budget "$budget" \
    --seeds "$seeds" --confirm "$confirm" --quiet --out "$out/$scheduler.csv" --summary-json "$json" > /dev/null
done
python3 - "$out" <<'PY'
import csv, json, pathlib, statistics, sys
out = pathlib.Path(sys.argv[1])
order = ["sequential", "round-robin", "random", "flop", "bandit", "bandit-epsilon", "bandit-softmax", "gradient"]
runs = {}
for name in order:
    series = {}
    with open(out / f"{name}.csv") as f:
        for row in csv.DictReader(f):
            series.setdefault(row["seed"], []).append((float(row["simulated_seconds"]), float(row["recorded_objective_ms"])))
    runs[name] = series
ref = statistics.median(s[-1][1] for series in runs.values() for s in series.values())
def to(s, target):
    return next((sec for sec, obj in s if obj <= target), float("inf"))
def med(v):
    m = statistics.median(v)
    return "never" if m == float("inf") else f"{m:.0f}"
def secs(v):
    return "never" if v is None else f"{v:.0f}"
first = json.loads((out / "sequential.json").read_text())
opt = first["optimum_objective_ms"]
print(f"tuner {first['tuner']}, budget {first['budget']}, slots of {first['slot_trials']}, seeds 0-{first['seeds'] - 1}; "
      f"optimum of the datasets {opt:.3f} ms (1.05x: {1.05 * opt:.3f}, 1.01x: {1.01 * opt:.3f}); reference (median "
      f"final recorded objective of all runs) {ref:.3f} ms\n")
print("| scheduler | final objective ms, measured | final objective ms, recorded | s to 1.05x optimum | "
      "s to 1.01x optimum | runs at 1.01x optimum | s to 1.05x reference | s to 1.01x reference | slots per task |")
print("|---|---|---|---|---|---|---|---|---|")
for name in order:
    j = json.loads((out / f"{name}.json").read_text())
    s = runs[name].values()
    slots = "/".join(f"{x:.0f}" for x in j["slots_per_task_median"])
    reached = sum(x is not None for x in j["recorded_seconds_to_1.01x_optimum"])
    print(f"| {name} | {j['final_objective_ms_median']:.3f} | {j['final_recorded_objective_ms_median']:.3f} | "
          f"{secs(j['recorded_seconds_to_1.05x_optimum_median'])} | {secs(j['recorded_seconds_to_1.01x_optimum_median'])} | "
          f"{reached} of {j['seeds']} | {med([to(x, 1.05 * ref) for x in s])} | {med([to(x, 1.01 * ref) for x in s])} | "
          f"{slots} |")
if first.get("confirm", 0) > 0:
    print(f"\nconfirmed at the end of each run (each task's {first['confirm']} fastest measured again, 3 turns, the "
          "fastest by them kept):\n")
    print("| scheduler | final objective ms, recorded, held | final objective ms, recorded, confirmed | "
          "runs at 1.01x optimum, held | runs at 1.01x optimum, confirmed | s of confirmation |")
    print("|---|---|---|---|---|---|")
    for name in order:
        j = json.loads((out / f"{name}.json").read_text())
        held = sum(x is not None and x <= 1.01 * opt for x in j["final_recorded_objective_ms"])
        conf = sum(x is not None and x <= 1.01 * opt for x in j["confirmed_recorded_objective_ms"])
        print(f"| {name} | {j['final_recorded_objective_ms_median']:.3f} | "
              f"{j['confirmed_recorded_objective_ms_median']:.3f} | {held} of {j['seeds']} | {conf} of {j['seeds']} | "
              f"{j['confirm_seconds_median']:.0f} |")
PY
