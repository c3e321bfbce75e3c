#!/usr/bin/env bash
# The ablation of tunekit's own search: every variant of build/bench/tpe_ablation (TreeParzen<>
# with one part removed or swapped) on every recorded space at hand, then the table of
# bench/tpe_ablation.py (each variant against the default, with 95% bootstrap intervals).
#   - GPU: the recorded spaces of shared/datasets,
#   - CPU: bench/recorded's CPU and H200 spaces (bench/recorded/*.csv and its folders),
#   - syn: bench/synthetic_spaces.py's 8 default spaces (seed 1).
#
#   bench/tpe_ablation.sh [OUT]                       (after building the target tpe_ablation)
#   VARIANTS="default no-crossovers" SEEDS=100 BUDGET=400 PARALLEL=1 SPACE_GROUPS="GPU CPU syn" bench/tpe_ablation.sh OUT
#
# Defaults: every variant, 100 seeds, budget 400, parallel 1, every group. Runs go JOBS (nproc) at
# a time; a space whose file already has SEEDS lines is skipped, so a stopped run resumes. The
# replays are deterministic: the same seeds give the same scores on any machine of the same
# floating-point behaviour (search seconds aside).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/tpe_ablation}
bin=${TPE_ABLATION:-build/bench/tpe_ablation}
seeds=${SEEDS:-100}
budget=${BUDGET:-400}
parallel=${PARALLEL:-1}
groups=${SPACE_GROUPS:-GPU CPU syn}
jobs=${JOBS:-$(nproc)}
# One thread per replay: the runs do not depend on it, and JOBS replays side by side would
# otherwise oversubscribe the cores (OpenMP barriers lose whole time slices).
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
datasets=${TUNEKIT_DATASETS:-../shared/datasets}
[[ -x $bin ]] || { echo "tpe_ablation.sh: $bin not built (cmake --build build --target tpe_ablation)" >&2; exit 2; }
variants=${VARIANTS:-$("$bin" --list | cut -f1)}
mkdir -p "$out"
if [[ " $groups " == *" syn "* && ! -s $out/synthetic-1/spaces.txt ]]; then
  /usr/bin/python3 bench/synthetic_spaces.py --out "$out/synthetic-1" >/dev/null
fi
spaces=$(
  for g in $groups; do
    case $g in
      GPU) for f in "$datasets"/*.csv; do printf 'GPU\t%s\n' "$f"; done ;;
      CPU) for f in bench/recorded/*.csv bench/recorded/*/*.csv; do printf 'CPU\t%s\n' "$f"; done ;;
      syn) for f in "$out"/synthetic-1/*.csv; do printf 'syn\t%s\n' "$f"; done ;;
      *) echo "tpe_ablation.sh: unknown group $g (GPU, CPU, syn)" >&2; exit 2 ;;
    esac
  done
)
for v in $variants; do
  mkdir -p "$out/p$parallel-b$budget/$v"
  while IFS=$'\t' read -r group csv; do
    file="$out/p$parallel-b$budget/$v/$group-$(basename "$csv" .csv).jsonl"
    [[ -s $file && $(wc -l <"$file") -ge $seeds ]] && continue
    printf '%s\0' "rm -f $file.part && $bin --dataset $csv --variant $v --seeds $seeds --budget $budget --parallel $parallel \
--out $file.part && mv $file.part $file || { echo tpe_ablation.sh: $v on $csv failed >&2; exit 1; }"
  done <<<"$spaces"
done | xargs -0 -r -P "$jobs" -I{} bash -c '{}'
/usr/bin/python3 bench/tpe_ablation.py "$out/p$parallel-b$budget"
