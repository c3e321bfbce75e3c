#!/usr/bin/env python3
"""A tunekit run against peers re-run with as many seeds, with the uncertainty of each median.

    /usr/bin/python3 bench/peer_bar.py --dataset FILE.csv --trials RUN.csv PEERS.json [PEERS.json ...]

FILE is read as bench/kt_peers.py reads it (a dataset CSV, a Kernel Tuner cache or a T4 results
file, gzipped or not; a cache or T4 file by its objective, or by --objective NAME
[--higher-is-better yes|no] as tunekit-replay reads it).
RUN.csv is `tunekit-replay --out` (any number of seeds); each PEERS.json is the --json of
bench/kt_peers.py or bench/optuna_peers.py (each strategy's curves, one per seed). Scores are
PEERS.md's found score: the space's best recorded time / the recorded time of the best config among
the first B measured (a strategy that stops early keeps its last score; past the budget a
strategy ran with, "-"). Per budget B it prints each strategy's median and mean over its seeds,
tunekit's median against the best strategy's, and a 95% bootstrap interval (2000 resamples of
each side's seeds) of tunekit's median minus the best strategy's; then, for e95 and e99 (the
median number of configs to reach 0.95 and 0.99 of the optimum), tunekit's against the smallest
of any strategy's, and a 95% bootstrap interval of their ratio (issue 22 asks for e95 at most
half the best peer's: a ratio of at most 0.5).

Why: shared/datasets/PEERS.md's bar in each cell is the largest of 16 medians over 15-25 seeds,
and the largest of several noisy medians lies above the medians it was drawn from; re-run with
more seeds, a cell's best strategy shows where it really lies (docs/benchmarks.md, "Over
100-400 seeds, with intervals").
"""

import argparse
import csv
import json
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kt_peers import (BUDGETS, add_objective_arguments, evals_to, firsts_to, read_recorded, score_at,  # noqa: E402
                      space_name)


def read_dataset(path, objective=None, higher_is_better=None):
    """(knob names, rows of knob values as tunekit's config text writes them, recorded ms per row,
    optimum ms) of a recorded space (a dataset CSV, a Kernel Tuner cache or a T4 results file,
    gzipped or not: kt_peers.read_recorded, by its objective or the one named). A number is
    written as JSON writes it, a string as it is."""
    tune_params, rows = read_recorded(path, objective, higher_is_better)
    values = [[v if isinstance(v, str) else json.dumps(v) for v in k] for k in rows]
    times = [t for t, _ in rows.values()]
    return list(tune_params), values, times, min(times)


def tunekit_curves(trials_csv, dataset):
    """Per seed, the found score after each trial of a tunekit-replay --out file. Its configs name
    the knobs of more than one value (name=value;...); the others must be constant in the dataset."""
    names, values, times, optimum = dataset
    curves, best, lookup, knobs = {}, {}, None, None
    with open(trials_csv) as f:
        for row in csv.DictReader(f):
            config = dict(p.split("=", 1) for p in row["config"].split(";"))
            if lookup is None:
                knobs = [names.index(n) for n in config]
                if any(len({v[k] for v in values}) > 1 for k in range(len(names)) if k not in knobs):
                    raise SystemExit(f"{trials_csv}: its configs lack knobs that vary in the dataset")
                lookup = {tuple(v[k] for k in knobs): t for v, t in zip(values, times)}
            seed = int(row["seed"])
            best[seed] = min(best.get(seed, math.inf), lookup[tuple(config[names[k]] for k in knobs)])
            curves.setdefault(seed, []).append(optimum / best[seed] if math.isfinite(best[seed]) else 0.0)
    return [curves[s] for s in sorted(curves)]


def median_at(curves, b):
    return statistics.median(score_at(c, b) for c in curves)


def bootstrap_interval(stat, ours, theirs, rng, resamples=2000):
    """stat(ours, theirs) and a 95% bootstrap interval of it (each side's sample resampled)."""
    draws = sorted(stat(rng.choices(ours, k=len(ours)), rng.choices(theirs, k=len(theirs)))
                   for _ in range(resamples))
    return stat(ours, theirs), draws[int(0.025 * resamples)], draws[int(0.975 * resamples) - 1]


def median_difference(a, b):
    return statistics.median(a) - statistics.median(b)


def median_ratio(a, b):
    """The ratio of the medians of two samples of run lengths (inf: a run that never got there). A
    median of inf over a finite one is inf, a finite one over inf 0, inf over inf inf (the measure
    does not tell them apart, and the first is not shown to be below)."""
    ma, mb = statistics.median(a), statistics.median(b)
    if math.isinf(ma):
        return math.inf
    return 0.0 if math.isinf(mb) else ma / mb


def ratio_interval(ours, theirs, rng):
    """median_ratio of two samples of run lengths and its 95% bootstrap interval."""
    return bootstrap_interval(median_ratio, ours, theirs, rng)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--trials", required=True, help="tunekit-replay --out file")
    ap.add_argument("--label", default="tunekit")
    ap.add_argument("peers", nargs="+", help="--json files of bench/kt_peers.py or bench/optuna_peers.py")
    add_objective_arguments(ap)
    args = ap.parse_args()

    ours = tunekit_curves(args.trials, read_dataset(args.dataset, args.objective, args.higher_is_better))
    peers, runs_to = {}, {}
    for path in args.peers:
        for name, d in json.loads(Path(path).read_text()).items():
            peers[name] = d["curves"]
            # Files written before kt_peers.py recorded its budget: as far as the longest run went.
            runs_to[name] = d.get("budget") or max(len(c) for c in d["curves"])
    budget = max(len(c) for c in ours)
    budgets = [b for b in BUDGETS if b <= budget]
    runs_to[args.label] = budget
    rng = random.Random(1)

    print(f"## {space_name(args.dataset)}\n")
    print("| strategy | seeds | " + " | ".join(f"B={b}" for b in budgets) + " | e95 | e99 |")
    print("|---|---|" + "---|" * (len(budgets) + 2))
    everyone = [(args.label, ours)] + sorted(peers.items())

    def cells(name, value):  # "-" past the budget the strategy ran with
        return " | ".join(f"{value(b):.3f}" if b <= runs_to[name] else "-" for b in budgets)

    for name, cs in everyone:
        print(f"| {name} | {len(cs)} | " + cells(name, lambda b: median_at(cs, b)) +
              f" | {evals_to(cs, 0.95, runs_to[name])} | {evals_to(cs, 0.99, runs_to[name])} |")
    print("\nMeans over the seeds (steadier than the medians where runs split in two):\n")
    print("| strategy | seeds | " + " | ".join(f"B={b}" for b in budgets) + " |")
    print("|---|---|" + "---|" * len(budgets))
    for name, cs in everyone:
        print(f"| {name} | {len(cs)} | " + cells(name, lambda b: statistics.mean(score_at(c, b) for c in cs)) + " |")
    print(f"\n| B | {args.label} | best strategy | its median | difference | 95% interval |")
    print("|---|---|---|---|---|---|")
    for b in budgets:
        ran = [n for n in peers if b <= runs_to[n]]
        if not ran:
            continue
        name = max(ran, key=lambda n: median_at(peers[n], b))
        a = [score_at(c, b) for c in ours]
        p = [score_at(c, b) for c in peers[name]]
        d, lo, hi = bootstrap_interval(median_difference, a, p, rng)
        print(f"| {b} | {statistics.median(a):.3f} | {name} | {statistics.median(p):.3f} | "
              f"{d:+.3f} | [{lo:+.3f}, {hi:+.3f}] |")
    print(f"\n| level | {args.label} | best strategy | its | ratio | 95% interval |")
    print("|---|---|---|---|---|---|")
    for level in (0.95, 0.99):
        firsts = {n: firsts_to(c, level) for n, c in peers.items()}
        name = min(firsts, key=lambda n: statistics.median(firsts[n]))
        r, lo, hi = ratio_interval(firsts_to(ours, level), firsts[name], rng)
        print(f"| e{round(level * 100)} | {evals_to(ours, level, runs_to[args.label])} | {name} | "
              f"{evals_to(peers[name], level, runs_to[name])} | {r:.2f} | [{lo:.2f}, {hi:.2f}] |")


if __name__ == "__main__":
    main()
