#!/usr/bin/env python3
"""Kernel Tuner's strategies on a recorded space, scored as shared/datasets/PEERS.md scores them.

    PYTHONPATH=../shared/vendor/kernel_tuner:../shared/vendor/python-constraint:../shared/vendor/meta \\
        /usr/bin/python3 bench/kt_peers.py --dataset FILE.csv [--seeds 25] [--budget 400] [--strategies a,b]

The dataset (shared/datasets' format, e.g. one that examples/record_space wrote; or a Kernel Tuner
cache file or T4 results file FILE.json, such as benchmark_hub's; either one gzipped, FILE.csv.gz
or FILE.json.gz) becomes a Kernel Tuner cache file: "time" each row's recorded mean in ms,
"times" its samples, a failed row RuntimeFailedConfig (for a file of another objective, or with
--objective NAME [--higher-is-better yes|no], each row's value of that objective:
dataset_as_cache). Each strategy then tunes it in Kernel Tuner's simulation mode with max_fevals =
budget and the objective with its direction, seeds 0 .. seeds-1 (numpy's and Python's generators
seeded before each run). bayes_opt needs scikit-learn (Debian's python3-sklearn; without it the
table says it did not run).
The score is PEERS.md's found score: the space's best recorded time / the recorded time of the best
config among the first B distinct configs measured (failed ones count toward B); the table gives
its median over the seeds at each B, e95/e99 the median number of distinct configs measured to
reach 0.95 / 0.99 (">budget" when half the seeds do not), and n@budget the median number of
distinct configs measured (some strategies stop early). Output: PEERS.md's heading and table (so
that bench/search_efficiency.sh finds the best peer in a PEERS.md made of them); --json FILE the
numbers and each run's curve.
"""

import argparse
import collections
import gzip
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


def read_text(path):
    """A file's text, decompressed when it is gzipped (told by its first bytes, as tunekit's readers
    tell it)."""
    data = Path(path).read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def without_gz(path):
    """The name of the file that `path` holds: without its .gz, if any."""
    p = Path(path)
    return Path(p.stem) if p.suffix == ".gz" else Path(p.name)


def space_name(path):
    """The space's name as tunekit-replay gives it: the file's name without its extension, nor a
    .gz before that (convolution_A100 of convolution_A100.json.gz)."""
    return without_gz(path).stem


def text_key(v):
    """Sorts a knob's values: numbers ascending, then strings."""
    return (isinstance(v, str), v)


# Kernel Tuner's objective_default_map (kernel_tuner/util.py): whether higher is better.
HIGHER_IS_BETTER = {"time": False, "energy": False, "cost": False, "loss": False, "fitness": True,
                    "GFLOP/s": True, "TFLOP/s": True, "GB/s": True, "TB/s": True, "GFLOPS/W": True,
                    "TFLOPS/W": True, "GFLOP/J": True, "TFLOP/J": True}
FAILURES = ("InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig", "ErrorConfig")


def add_objective_arguments(ap):
    """--objective and --higher-is-better, as tunekit-replay takes them (read_recorded)."""
    ap.add_argument("--objective", help="what a cache or T4 file is replayed by (default: its own objective)")
    ap.add_argument("--higher-is-better", choices=["yes", "no"],
                    help="the objective's direction (default: Kernel Tuner's for its name)")


def resolve_objective(path, objective, own, higher_is_better):
    """(objective, higher is better) a file is read by: `objective`, else the file's own (`own`;
    time when None), better higher as `higher_is_better` ("yes"/"no") says, else as Kernel Tuner's
    default for the name; as tunekit's readers resolve them (kernel_tuner_cache.hpp)."""
    objective = objective or own or "time"
    higher = {"yes": True, "no": False}.get(higher_is_better, HIGHER_IS_BETTER.get(objective))
    if higher is None:
        raise SystemExit(f"{path}: Kernel Tuner knows no direction for the objective '{objective}'; "
                         "say whether higher is better (--higher-is-better yes|no)")
    if objective == "time" and higher:
        raise SystemExit(f"{path}: the objective time is better lower, not higher")
    return objective, higher


def replayed(v, higher):
    """A recorded value v of an objective other than time as the readers give it: (mean, samples),
    the value as it is or, where higher is better, 1 / it, its only sample."""
    cost = 1.0 / v if higher else float(v)
    return cost, [cost]


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def knob_value(v):
    """A parameter value as tunekit reads it: true/false as 1/0."""
    return int(v) if isinstance(v, bool) else v


# Milliseconds per unit of a T4 file's time units (kernel_tuner_cache.hpp: t4_unit_ms).
T4_UNIT_MS = {"nanoseconds": 1e-6, "ns": 1e-6, "microseconds": 1e-3, "us": 1e-3, "milliseconds": 1.0, "ms": 1.0,
              "seconds": 1e3, "s": 1e3}


def read_t4(path, doc, objective, higher_is_better):
    """read_recorded of a T4 results file (tunekit's reader: kernel_tuner_cache.hpp): the parameters
    those of the first result's "configuration", in its order; a result whose "invalidity" is not
    "correct" failed; the mean time its measurement named "time" (in its unit, else the file's
    metadata.timeunit), else its runtimes' mean, the samples its runtimes (else the mean); another
    objective (the first result's "objectives", or `objective`) its measurement of that name."""
    results = doc["results"]
    if not results:
        raise SystemExit(f"{path}: no recorded configs")
    own = (results[0].get("objectives") or [None])[0]
    objective, higher = resolve_objective(path, objective, own, higher_is_better)
    unit = T4_UNIT_MS[(doc.get("metadata") or {}).get("timeunit") or "milliseconds"]
    names = list(results[0]["configuration"])
    recorded, values = {}, {}
    for r in results:
        key = tuple(knob_value(r["configuration"][n]) for n in names)
        measured = {m.get("name"): m for m in r.get("measurements") or [] if isinstance(m, dict)}
        if r.get("invalidity") != "correct":
            recorded[key] = (math.inf, [])
        elif objective == "time":
            runtimes = [x * unit for x in (r.get("times") or {}).get("runtimes") or []]
            m = measured.get("time")
            if m:
                t = m["value"] * (T4_UNIT_MS[m["unit"]] if m.get("unit") else unit)
            else:
                t = statistics.mean(runtimes)
            recorded[key] = (t, runtimes or [t])
        else:
            values[key] = measured[objective]["value"]
            recorded[key] = replayed(values[key], higher)
    tune_params = {n: sorted({k[i] for k in recorded}, key=text_key) for i, n in enumerate(names)}
    return Space(tune_params, recorded, objective, higher, values)


def read_recorded(path, objective=None, higher_is_better=None):
    """A recorded space as tunekit-replay --dataset reads one: a shared/datasets CSV, or a Kernel
    Tuner cache file or T4 results file (.json), either one gzipped (.gz; benchmark_hub's files
    are). Returns (tune_params, recorded): each knob's values in order, and {config values:
    (recorded mean ms, samples ms)}, a failed config's mean inf with no samples. A CSV's values are
    ints, ascending. A cache's are its entries' JSON values (true/false as 1/0, as tunekit reads
    them) in the order of its "tune_params", its "time" the mean (an entry with a value such as
    "InvalidConfig", its "__error__" or its "time", a failed config) and its "times" the samples
    (else "time" alone); a cache still being written (no closing brackets) is read as Kernel Tuner
    reads it. A T4 file: read_t4. A cache or T4 file is read by the objective it names, or by
    `objective` (tunekit-replay --objective: docs/getting-started.md, "Replaying another
    objective"): for another than time each config's value of it is its mean and only sample, as
    it is or, where higher is better (`higher_is_better` "yes"/"no", else Kernel Tuner's default
    for the name), as 1 / it, so that scores are ratios of its values as tunekit-replay's are.
    bench/peer_bar.py reads spaces by it too, bench/optuna_peers.py by read_with_objective."""
    return read_with_objective(path, objective, higher_is_better)[:2]


# A recorded space as read_with_objective reads it: read_recorded's tune_params and recorded, the
# objective it was read by and whether higher is better (a CSV's: time, lower), and by another
# objective than time each successful config's own value of it ({config values: value}; empty for
# time).
Space = collections.namedtuple("Space", "tune_params recorded objective higher values")


def read_with_objective(path, objective=None, higher_is_better=None):
    """read_recorded's space with the objective it was read by (a Space)."""
    text = read_text(path)
    recorded, values = {}, {}
    if without_gz(path).suffix != ".json" and (objective not in (None, "time") or higher_is_better == "yes"):
        raise SystemExit(f"{path}: a dataset CSV records time alone, which is better lower")
    if without_gz(path).suffix == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = json.loads(text.rstrip().rstrip(",") + "}}")
        if isinstance(doc, dict) and isinstance(doc.get("results"), list) and "cache" not in doc:
            tune_params, recorded, objective, higher, values = read_t4(path, doc, objective, higher_is_better)
        elif not isinstance(doc, dict) or "cache" not in doc or "tune_params_keys" not in doc:
            raise SystemExit(f"{path}: neither a Kernel Tuner cache file nor a T4 results file")
        else:
            names = doc["tune_params_keys"]
            own = doc.get("objective")
            if isinstance(own, list):
                if len(own) > 1 and objective is None:
                    raise SystemExit(f"{path}: it was tuned for the objectives {own}; "
                                     "say which one to replay (--objective)")
                own = own[0] if own else None
            objective, higher = resolve_objective(path, objective, own, higher_is_better)
            for entry in doc["cache"].values():
                key = tuple(knob_value(entry[n]) for n in names)
                failed = any(isinstance(x, str) and x in FAILURES for x in entry.values())  # as read_cache
                v = entry.get(objective)
                if failed or not positive(v):
                    recorded[key] = (math.inf, [])
                elif objective == "time":
                    recorded[key] = (float(v), [float(x) for x in entry.get("times") or [v]])
                else:
                    values[key] = v
                    recorded[key] = replayed(v, higher)
            listed = doc.get("tune_params", {})
            tune_params = {}
            for i, n in enumerate(names):
                seen = {k[i] for k in recorded}
                order = [knob_value(v) for v in listed.get(n, [])]
                tune_params[n] = [v for v in order if v in seen] if seen <= set(order) else sorted(seen, key=text_key)
    else:
        objective, higher = "time", False
        lines = text.splitlines()
        names = lines[0].split(",")[:-2]
        for line in lines[1:]:
            if line:
                r = line.split(",")
                t = float(r[-2])
                recorded[tuple(int(v) for v in r[:-2])] = (t, [float(x) for x in r[-1].split(";")]
                                                              if math.isfinite(t) else [])
        tune_params = {n: sorted({k[i] for k in recorded}) for i, n in enumerate(names)}
    if not recorded:
        raise SystemExit(f"{path}: no recorded configs")
    return Space(tune_params, recorded, objective, higher, values)


def dataset_as_cache(path, out, samples=True, objective=None, higher_is_better=None):
    """A recorded space (read_with_objective) as a Kernel Tuner cache file (kernel_tuner/util.py:
    process_cache's format): "time" each config's recorded mean in ms, a failed one
    RuntimeFailedConfig, and with `samples` "times" its samples (Kernel Tuner's simulation answers
    with "time" alone; tunekit-replay, reading the cache, replays "times" where there are any).
    A space read by another objective keeps it: the cache's "objective" is its name, each entry has
    its recorded value under that name and "time" the replayed value, so that Kernel Tuner's
    strategies, given objective=NAME and its direction (main passes both), make the trials they
    make on the original file, those that use the values themselves (simulated annealing's
    acceptance, basinhopping, bayes_opt) too. (The recorded value, not the inverse of the replayed
    one: rounding changes that in the last bit, and basinhopping then searches otherwise.) Returns
    (tune_params, {config values: replayed value}, optimum, objective, higher is better).
    tests/python/test_kernel_tuner.py uses it too."""
    tune_params, rows, objective, higher, values = read_with_objective(path, objective, higher_is_better)
    names = list(tune_params)
    cache, recorded = {}, {}
    for key, (t, times) in rows.items():
        entry = dict(zip(names, key))
        if math.isinf(t):
            entry["time"] = "RuntimeFailedConfig"
            if objective != "time":
                entry[objective] = "RuntimeFailedConfig"
        else:
            entry["time"] = t
            if objective != "time":
                entry[objective] = values[key]
            elif samples:
                entry["times"] = times
        entry.update(compile_time=0, verification_time=0, benchmark_time=0, strategy_time=0, framework_time=0,
                     timestamp="recorded")
        cache[",".join(map(str, key))] = entry
        recorded[key] = t
    Path(out).write_text(json.dumps({"device_name": "recorded", "kernel_name": space_name(path),
                                     "problem_size": 0, "tune_params_keys": names, "tune_params": tune_params,
                                     "objective": objective, "cache": cache}))
    return tune_params, recorded, min(recorded.values()), objective, higher


def tune(cache, kernel_name, problem_size, tune_params, recorded, strategy, budget, seed, objective, higher):
    """Kernel Tuner's results of one run of `strategy` in simulation mode on the cache file `cache`
    (of that kernel name and problem size), restricted to the `recorded` configs, with max_fevals
    `budget`, numpy's and Python's generators seeded with `seed`, tuning `objective` (`higher`: is
    better higher)."""
    import kernel_tuner
    import numpy as np

    names = list(tune_params)

    def recorded_only(p):
        # Kernel Tuner's old-style restriction (one dict): exactly the recorded configs. A def, not
        # a lambda: Kernel Tuner rewrites lambdas from their source text.
        return tuple(p[n] for n in names) in recorded

    random.seed(seed)
    np.random.seed(seed)
    results, _ = kernel_tuner.tune_kernel(
        kernel_name, "__global__ void k() {}", problem_size, [], tune_params, restrictions=recorded_only,
        strategy=strategy, strategy_options=dict(max_fevals=budget), objective=objective,
        objective_higher_is_better=higher, verbose=False, quiet=True, cache=str(cache), simulation_mode=True)
    return results


def best_text(objective, higher, optimum):
    """The best value of a space read by `objective` (`higher`: is better higher) whose best replayed
    value is `optimum`, as the peer scripts' table headings give it."""
    if objective == "time":
        return f"best {optimum:g} ms"
    return f"by {objective} ({'higher' if higher else 'lower'} is better), best {1 / optimum if higher else optimum:g}"


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


def firsts_to(curves, level):
    """Per run, the number of distinct configs it measured to first reach `level` (inf: never)."""
    return [next((i + 1 for i, s in enumerate(c) if s >= level - 1e-12), math.inf) for c in curves]


def evals_to(curves, level, budget):
    """The median of firsts_to as PEERS.md writes it (">budget" where half the runs never reach)."""
    m = statistics.median(firsts_to(curves, level))
    return f">{budget}" if math.isinf(m) else f"{m:g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--json")
    add_objective_arguments(ap)
    args = ap.parse_args()
    import kernel_tuner

    tmp = tempfile.TemporaryDirectory()
    cache = Path(tmp.name) / "cache.json"
    tune_params, recorded, optimum, objective, higher = dataset_as_cache(
        args.dataset, cache, objective=args.objective, higher_is_better=args.higher_is_better)
    names = list(tune_params)
    budgets = [b for b in BUDGETS if b <= args.budget]
    out, not_run = {}, []
    # PEERS.md's layout, which bench/search_efficiency.sh reads (the best peer per cell).
    print(f"## {space_name(args.dataset)}\n")
    print(f"{len(recorded)} configs, {best_text(objective, higher, optimum)}; Kernel Tuner {kernel_tuner.__version__}, "
          f"simulation mode, budget {args.budget}; s/run: seconds per run of the strategy (its search)\n")
    print("| strategy | seeds | " + " | ".join(f"B={b}" for b in budgets) + f" | e95 | e99 | n@{args.budget} | s/run |")
    print("|---|" + "---|" * (len(budgets) + 5))
    for name in args.strategies.split(","):
        curves, took = [], []
        try:
            for seed in range(args.seeds):
                start = time.perf_counter()
                results = tune(cache, space_name(args.dataset), 0, tune_params, recorded, name, args.budget, seed,
                               objective, higher)
                took.append(time.perf_counter() - start)
                curves.append(found_curve(results, names, recorded, optimum, args.budget))
        except ImportError as e:  # a strategy's optional dependency (bayes_opt: scikit-learn)
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
