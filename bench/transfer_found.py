#!/usr/bin/env python3
"""Found score at small budgets from tunekit-replay --out files (docs/concepts.md, "Transfer").

usage: transfer_found.py DATASET.csv OUT.csv [OUT.csv ...]
For each --out file: the mean over its seeds of found(B) = optimum / best recorded time among the
first B configs measured, at B = 5, 10, 25, 50, 100, 200, and the median e95 (configs to 0.95 of
the optimum; a run that never gets there counts as infinity)."""
import csv, math, statistics, sys

BUDGETS = (5, 10, 25, 50, 100, 200)


def recorded(dataset):
    with open(dataset) as f:
        r = csv.reader(f)
        head = next(r)
        ti = head.index("time_ms")
        out = {}
        for row in r:
            try:
                t = float(row[ti])
            except ValueError:
                t = math.inf
            if not (t > 0 and math.isfinite(t)):
                t = math.inf
            out[tuple(zip(head[:ti], row[:ti]))] = t
        return head[:ti], out


def main():
    knobs, times = recorded(sys.argv[1])
    optimum = min(times.values())
    varying = None
    for path in sys.argv[2:]:
        runs = {}
        with open(path) as f:
            for row in csv.DictReader(f):
                runs.setdefault(row["seed"], []).append(row["config"])
        if varying is None:
            first = next(iter(runs.values()))[0]
            varying = [p.split("=", 1)[0] for p in first.split(";")]
            table = {}
            for key, t in times.items():
                d = dict(key)
                table[tuple(d[k] for k in varying)] = t
        found = {b: [] for b in BUDGETS}
        e95 = []
        for seed, configs in runs.items():
            best = math.inf
            curve = []
            for c in configs:
                vals = tuple(p.split("=", 1)[1] for p in c.split(";"))
                best = min(best, table.get(vals, math.inf))
                curve.append(optimum / best)
            for b in BUDGETS:
                found[b].append(curve[min(b, len(curve)) - 1])
            e95.append(next((i + 1 for i, s in enumerate(curve) if s >= 0.95), math.inf))
        cells = " ".join("%.3f" % statistics.fmean(found[b]) for b in BUDGETS)
        print("%-40s %s  e95 %s  (%d seeds)" % (path.split("/")[-1], cells, statistics.median(e95), len(runs)))


if __name__ == "__main__":
    main()
