#!/usr/bin/env python3
"""Kernel Tuner's strategies on a recorded space, scored as shared/datasets/PEERS.md scores them.

    PYTHONPATH=../shared/vendor/kernel_tuner:../shared/vendor/python-constraint:../shared/vendor/meta \\
        /usr/bin/python3 bench/kt_peers.py --dataset FILE.csv [--seeds 25] [--budget 400] [--strategies a,b]

The dataset (shared/datasets' format, e.g. one that examples/record_space wrote) becomes a Kernel
Tuner cache file: "time" each row's recorded mean in ms, "times" its samples, a failed row
RuntimeFailedConfig. Each strategy then tunes it in Kernel Tuner's simulation mode with
max_fevals = budget, seeds 0 .. seeds-1 (numpy's and Python's generators seeded before each run).
The score is PEERS.md's found score: the space's best recorded time / the recorded time of the best
config among the first B distinct configs measured (failed ones count toward B); the table gives
its median over the seeds at each B, e95/e99 the median number of distinct configs measured to
reach 0.95 / 0.99 (">budget" when half the seeds do not), and n@budget the median number of
distinct configs measured (some strategies stop early). Output: PEERS.md's heading and table (so
that bench/search_efficiency.sh finds the best peer in a PEERS.md made of them); --json FILE the
numbers and each run's curve.
"""

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

STRATEGIES = ["random_sample", "simulated_annealing", "genetic_algorithm", "bayes_opt", "dual_annealing",
              "greedy_ils", "pso", "diff_evo", "firefly_algorithm", "basinhopping", "hybrid_vndx",
              "adaptive_tabu_greywolf"]
BUDGETS = [25, 50, 100, 200, 400]


def read_rows(csv_path):
    """A recorded space (shared/datasets' CSV format): the knob names and each row's fields as
    strings (the knobs' values, then time_ms and samples). bench/optuna_peers.py and
    bench/peer_bar.py read it too."""
    lines = Path(csv_path).read_text().splitlines()
    return lines[0].split(",")[:-2], [line.split(",") for line in lines[1:] if line]


def dataset_as_cache(csv_path, out, samples=True):
    """The dataset as a Kernel Tuner cache file (kernel_tuner/util.py: process_cache's format): "time"
    each row's recorded mean in ms, a failed row RuntimeFailedConfig, and with `samples` "times" its
    samples (Kernel Tuner's simulation answers with "time" alone; tunekit-replay, reading the cache,
    replays "times" where there are any). Returns (tune_params, {config values: recorded ms},
    optimum ms). tests/python/test_kernel_tuner.py uses it too."""
    names, rows = read_rows(csv_path)
    tune_params = {n: sorted({int(r[i]) for r in rows}) for i, n in enumerate(names)}
    cache, recorded = {}, {}
    for r in rows:
        values = tuple(int(v) for v in r[:-2])
        entry = dict(zip(names, values))
        t = float(r[-2])
        if math.isinf(t):
            entry["time"] = "RuntimeFailedConfig"
        else:
            entry["time"] = t
            if samples:
                entry["times"] = [float(x) for x in r[-1].split(";")]
        entry.update(compile_time=0, verification_time=0, benchmark_time=0, strategy_time=0, framework_time=0,
                     timestamp="recorded")
        cache[",".join(map(str, values))] = entry
        recorded[values] = t
    Path(out).write_text(json.dumps({"device_name": "recorded", "kernel_name": Path(csv_path).stem,
                                     "problem_size": 0, "tune_params_keys": names, "tune_params": tune_params,
                                     "objective": "time", "cache": cache}))
    return tune_params, recorded, min(recorded.values())


def found_curve(results, names, recorded, optimum, budget):
    """The found score after each distinct config measured (at most budget)."""
    seen, best, curve = set(), math.inf, []
    for r in results:
        key = tuple(r[n] for n in names)
        if key in seen:
            continue
        seen.add(key)
        best = min(best, recorded[key])
        curve.append(optimum / best if math.isfinite(best) else 0.0)
        if len(curve) == budget:
            break
    return curve


def score_at(curve, budget):
    """A run's found score after `budget` distinct configs: its last score where it stopped short,
    0 where it met no recorded config at all (an empty curve)."""
    return curve[min(budget, len(curve)) - 1] if curve else 0.0


def evals_to(curves, level, budget):
    firsts = sorted(next((i + 1 for i, s in enumerate(c) if s >= level - 1e-12), math.inf) for c in curves)
    m = statistics.median(firsts)
    return f">{budget}" if math.isinf(m) else f"{m:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--json")
    args = ap.parse_args()
    import kernel_tuner
    import numpy as np

    tmp = tempfile.TemporaryDirectory()
    cache = Path(tmp.name) / "cache.json"
    tune_params, recorded, optimum = dataset_as_cache(args.dataset, cache)
    names = list(tune_params)

    def recorded_only(p):
        # Kernel Tuner's old-style restriction (one dict): exactly the recorded configs. A def, not
        # a lambda: Kernel Tuner rewrites lambdas from their source text.
        return tuple(p[n] for n in names) in recorded

    budgets = [b for b in BUDGETS if b <= args.budget]
    out, not_run = {}, []
    # PEERS.md's layout, which bench/search_efficiency.sh reads (the best peer per cell).
    print(f"## {Path(args.dataset).stem}\n")
    print(f"{len(recorded)} configs, best {optimum:g} ms; Kernel Tuner {kernel_tuner.__version__}, simulation mode, "
          f"budget {args.budget}; s/run: seconds per run of the strategy (its search)\n")
    print("| strategy | seeds | " + " | ".join(f"B={b}" for b in budgets) + f" | e95 | e99 | n@{args.budget} | s/run |")
    print("|---|" + "---|" * (len(budgets) + 5))
    for name in args.strategies.split(","):
        curves, took = [], []
        try:
            for seed in range(args.seeds):
                random.seed(seed)
                np.random.seed(seed)
                start = time.perf_counter()
                results, _ = kernel_tuner.tune_kernel(
                    Path(args.dataset).stem, "__global__ void k() {}", 0, [], tune_params,
                    restrictions=recorded_only, strategy=name, strategy_options=dict(max_fevals=args.budget),
                    verbose=False, quiet=True, cache=str(cache), simulation_mode=True)
                took.append(time.perf_counter() - start)
                curves.append(found_curve(results, names, recorded, optimum, args.budget))
        except ImportError as e:  # a strategy's optional dependency (bayes_opt: scikit-optimize)
            not_run.append(f"{name} ({str(e).split(', please')[0].removeprefix('Error: ')})")
            continue
        at = {b: statistics.median(score_at(c, b) for c in curves) for b in budgets}
        n = statistics.median(len(c) for c in curves)
        row = [name, str(args.seeds)] + [f"{at[b]:.3f}" for b in budgets] + [evals_to(curves, 0.95, args.budget),
                                                           evals_to(curves, 0.99, args.budget), f"{n:g}",
                                                           f"{statistics.mean(took):.1f}"]
        print("| " + " | ".join(row) + " |")
        sys.stdout.flush()
        out[name] = {"budget": args.budget, "median": {str(b): at[b] for b in budgets}, "e95": row[-4],
                     "e99": row[-3], "n": n, "curves": curves}
    if not_run:
        print("\nNot run: " + "; ".join(not_run) + ".")
    if args.json:
        Path(args.json).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
