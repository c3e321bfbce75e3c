#!/usr/bin/env python3
"""Optuna's TPE sampler on a recorded space, scored as shared/datasets/PEERS.md scores its peers.

    /usr/bin/python3 bench/optuna_peers.py --dataset FILE.csv [--seeds 25] [--budget 400]
        [--max-trials N] [--samplers tpe,tpe_multivariate] [--json FILE]

FILE is read as bench/kt_peers.py reads it (a dataset CSV, a Kernel Tuner cache or a T4 results
file, gzipped or not; a cache or T4 file by its objective, or by --objective NAME
[--higher-is-better yes|no] as tunekit-replay reads it).

Each knob is a categorical parameter over its recorded values (`suggest_categorical`), the study
minimises the recorded mean time (by another objective the replayed value, 1 / the objective where
higher is better: TPE splits the trials by the order of their values, which is the order of the
objective's), and each seed s runs `TPESampler(seed=s)` (Optuna's defaults:
10 random start-up trials, gamma 0.1 capped at 25, 24 candidates; `multivariate=True` for
tpe_multivariate). How the answers are given:
- a recorded config: its recorded mean (a failed one, time inf, is told as a failed trial);
- a combination of values outside the recorded set (one the space's restrictions exclude, which a
  real tuner would not compile): 1e9, so the sampler learns to avoid the region; it is not a
  measured config and does not count toward the budget;
- a config measured before: its recorded mean again, not counted.
The run stops after `budget` distinct recorded configs, or after --max-trials trials in all
(default 4 x budget): a sampler that repeats configs often stops short (n@budget), and its cells
past that point are its last score. A run that met no recorded config at all (on a space whose
restrictions leave a small share of the knobs' product, the sampler learns only that what it
tried is outside) scores 0 at every budget, and the table says how many runs did. PEERS.md's
default-TPE rows stopped at 95-168 distinct configs of 400, after a number of trials it does not
state; where either stops short, the later cells are not comparable. The score is PEERS.md's
found score after each distinct config; the table is bench/kt_peers.py's.

PEERS.md does not say how its Optuna rows treated combinations outside the recorded set; with this
treatment seeds 0-24 give its rows of gemm_RTX_2080_Ti and gemm_RTX_3090 exactly at B = 25 and 50,
and those of convolution_A100 and convolution_A4000 within 0.02 (docs/benchmarks.md, "Over
100-400 seeds, with intervals").
"""

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kt_peers import (BUDGETS, add_objective_arguments, best_text, evals_to, read_with_objective,  # noqa: E402
                      score_at, space_name, text_key)

SAMPLERS = ["tpe", "tpe_multivariate"]
OUTSIDE = 1e9  # the answer for a combination outside the recorded set


def read_space(path, objective=None, higher_is_better=None):
    """(knob names, {config values: replayed value}, optimum, what the space was read by) of a
    recorded space (a dataset CSV, a Kernel Tuner cache or a T4 results file, gzipped or not, by
    its objective or the one named: kt_peers.read_with_objective). The replayed value is the
    recorded mean ms, or by another objective its value or 1 / it where higher is better; the last
    item says which, as kt_peers' table heading does ("best 5.66 ms", "by GFLOPS/W (higher is
    better), best 2.78")."""
    space = read_with_objective(path, objective, higher_is_better)
    recorded = {values: t for values, (t, _) in space.recorded.items()}
    finite = [t for t in recorded.values() if math.isfinite(t)]
    if not finite:
        raise SystemExit(f"{path}: no config ran")
    optimum = min(finite)
    return list(space.tune_params), recorded, optimum, best_text(space.objective, space.higher, optimum)


def run(optuna, names, recorded, optimum, budget, seed, multivariate, max_trials):
    """One study of at most `max_trials` trials; the found score after each distinct recorded
    config (at most `budget`)."""
    values = {n: sorted({k[i] for k in recorded}, key=text_key) for i, n in enumerate(names)}
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, multivariate=multivariate))
    seen, best, curve = set(), math.inf, []
    for _ in range(max_trials):
        if len(curve) == budget:
            break
        trial = study.ask()
        key = tuple(trial.suggest_categorical(n, values[n]) for n in names)
        if key not in recorded:
            study.tell(trial, OUTSIDE)
            continue
        t = recorded[key]
        if key not in seen:
            seen.add(key)
            best = min(best, t)
            curve.append(optimum / best if math.isfinite(best) else 0.0)
        if math.isfinite(t):
            study.tell(trial, t)
        else:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return curve


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--max-trials", type=int, help="trials per run in all (default 4 x budget)")
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--json")
    add_objective_arguments(ap)
    args = ap.parse_args()
    import warnings

    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

    names, recorded, optimum, best = read_space(args.dataset, args.objective, args.higher_is_better)
    max_trials = args.max_trials or 4 * args.budget
    budgets = [b for b in BUDGETS if b <= args.budget]
    print(f"## {space_name(args.dataset)}\n")
    print(f"{len(recorded)} configs, {best}; Optuna {optuna.__version__}, budget {args.budget}, "
          f"at most {max_trials} trials; s/run: seconds per run of the sampler\n")
    print("| strategy | seeds | " + " | ".join(f"B={b}" for b in budgets) + f" | e95 | e99 | n@{args.budget} | s/run |")
    print("|---|" + "---|" * (len(budgets) + 5))
    out = {}
    for name in args.samplers.split(","):
        if name not in SAMPLERS:
            raise SystemExit(f"unknown sampler {name!r} (known: {', '.join(SAMPLERS)})")
        curves, took = [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            curves.append(run(optuna, names, recorded, optimum, args.budget, seed, name == "tpe_multivariate",
                              max_trials))
            took.append(time.perf_counter() - start)
        at = {b: statistics.median(score_at(c, b) for c in curves) for b in budgets}
        empty = sum(not c for c in curves)
        n = statistics.median(len(c) for c in curves)
        row = [f"optuna_{name}", str(args.seeds)] + [f"{at[b]:.3f}" for b in budgets] + [
            evals_to(curves, 0.95, args.budget), evals_to(curves, 0.99, args.budget), f"{n:g}",
            f"{statistics.mean(took):.1f}"]
        print("| " + " | ".join(row) + " |")
        if empty:
            print(f"\n{name}: {empty} of {args.seeds} runs met no recorded config in {max_trials} trials (score 0)\n")
        sys.stdout.flush()
        out[f"optuna_{name}"] = {"budget": args.budget, "median": {str(b): at[b] for b in budgets}, "e95": row[-4],
                                 "e99": row[-3], "n": n, "empty_runs": empty, "curves": curves}
    if args.json:
        Path(args.json).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
