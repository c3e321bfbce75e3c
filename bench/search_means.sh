#!/usr/bin/env bash
# How a search does on every space at hand, as docs/tried-and-not-taken.md compares a change to the
# default search with the default: the mean found score (PEERS.md's score of the best config
# measured so far, averaged over the seeds; found_score_mean of tunekit-replay's summary) at
# B = 25, 50, 100 and 200 of each preset, on
#   - GPU: the recorded spaces of shared/datasets (the issue's benchmark),
#   - CPU: the recorded CPU spaces of bench/recorded,
#   - syn1: bench/synthetic_spaces.py's 8 default spaces (seed 1),
#   - syn2: 12 synthetic spaces of each of seeds 7777 and 9191 (held out: no default was chosen on them).
# Prints each group's mean per preset, then per budget on how many spaces each preset is ahead of
# the first preset and behind it by more than 0.002 (the first preset is the reference).
#
#   bench/search_means.sh [OUT]                     (after scripts/build.sh)
#   TUNERS="tpe-gp-rf-restarts tpe-gp" SEEDS=100 BUDGET=200 SYNTHETIC=1 bench/search_means.sh OUT
#
# Defaults: the default preset and tpe-local (the same search without its model start), 100 seeds,
# budget 200, every group: about 7 minutes on 2 cores (the tpe-* presets; the forest and
# boosted-tree presets of the papers take far longer). SYNTHETIC=0
# leaves the synthetic spaces out. Runs go JOBS (nproc) at a time; a summary already in OUT is
# kept, so a stopped run resumes. The replays are deterministic: the same seeds give the same means
# on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/search_means}
replay=${TUNEKIT_REPLAY:-build/tools/tunekit-replay}
tuners=${TUNERS:-tpe-gp-rf-restarts tpe-local}
seeds=${SEEDS:-100}
budget=${BUDGET:-200}
synthetic=${SYNTHETIC:-1}
jobs=${JOBS:-$(nproc)}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
[[ -x $replay ]] || { echo "search_means: $replay not built (scripts/build.sh)" >&2; exit 2; }
mkdir -p "$out"
if [[ $synthetic == 1 ]]; then
  for s in 1 7777 9191; do
    dir="$out/synthetic-$s"
    [[ -s $dir/spaces.txt ]] && continue
    if [[ $s == 1 ]]; then args=(); else args=(--count 12 --seed "$s"); fi
    /usr/bin/python3 bench/synthetic_spaces.py --out "$dir" "${args[@]}" >/dev/null
  done
fi
# group<TAB>csv, one line per space.
spaces=$(
  for f in "$datasets"/*.csv; do printf 'GPU\t%s\n' "$f"; done
  for f in bench/recorded/*.csv; do printf 'CPU\t%s\n' "$f"; done
  if [[ $synthetic == 1 ]]; then
    for f in "$out"/synthetic-1/*.csv; do printf 'syn1\t%s\n' "$f"; done
    for f in "$out"/synthetic-7777/*.csv "$out"/synthetic-9191/*.csv; do printf 'syn2\t%s\n' "$f"; done
  fi
)
# One replay per (preset, space), JOBS at a time.
for tuner in $tuners; do
  mkdir -p "$out/$tuner"
  while IFS=$'\t' read -r group csv; do
    json="$out/$tuner/$group-$(basename "$csv" .csv).json"
    # A failed run prints its error and fails the script (xargs exits non-zero).
    [[ -s $json ]] || printf '%s\0' "$replay --dataset $csv --tuner $tuner --seeds $seeds --budget $budget --quiet \
--summary-json $json.part >/dev/null 2>$json.err && mv $json.part $json && rm $json.err || \
{ echo search_means: $tuner on $csv failed: >&2; cat $json.err >&2; exit 1; }"
  done <<<"$spaces"
done | xargs -0 -r -P "$jobs" -n 1 sh -c 'eval "$1"' sh
/usr/bin/python3 - "$out" $tuners <<'PY'
import json, pathlib, sys
out, tuners = pathlib.Path(sys.argv[1]), sys.argv[2:]
means = {t: {p.stem: json.loads(p.read_text()) for p in sorted((out / t).glob("*.json"))} for t in tuners}
spaces = sorted(set.intersection(*(set(m) for m in means.values())))
if not spaces:
    sys.exit("search_means: no space has a summary of every preset")
budgets = [b for b in ("25", "50", "100", "200", "400")
           if all(b in means[t][s]["found_score_mean"] for t in tuners for s in spaces)]
groups = sorted({s.split("-", 1)[0] for s in spaces}, key=["GPU", "CPU", "syn1", "syn2"].index)
print(f"mean found score at B = {' / '.join(budgets)}; {means[tuners[0]][spaces[0]]['seeds']} seeds")
print("| spaces | " + " | ".join(tuners) + " |")
print("|---" * (len(tuners) + 1) + "|")
for g in groups:
    mine = [s for s in spaces if s.startswith(g + "-")]
    cells = [" / ".join(f"{sum(means[t][s]['found_score_mean'][b] for s in mine) / len(mine):.3f}" for b in budgets)
             for t in tuners]
    print(f"| {len(mine)} {g} | " + " | ".join(cells) + " |")
ref = tuners[0]
for t in tuners[1:]:
    counts = []
    for b in budgets:
        d = [means[t][s]["found_score_mean"][b] - means[ref][s]["found_score_mean"][b] for s in spaces]
        counts.append(f"{sum(x > 0.002 for x in d)}-{sum(x < -0.002 for x in d)}")
    print(f"{t} against {ref}, of {len(spaces)} spaces ahead-behind by more than 0.002: {' / '.join(counts)}")
PY
