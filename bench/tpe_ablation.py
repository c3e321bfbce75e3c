#!/usr/bin/env python3
"""The table of tunekit's search's ablation: each variant against the default, per group of spaces.

    /usr/bin/python3 bench/tpe_ablation.py DIR [--reference default] [--markdown]

DIR holds VARIANT/GROUP-SPACE.jsonl files of build/bench/tpe_ablation (bench/tpe_ablation.sh
writes them). For each variant and group: the mean over the group's spaces of the variant's mean
found score minus the reference's at B = 25, 50, 100, 200, 400 (each space's difference with a 95%
bootstrap interval over its seeds, paired by seed: 2000 resamples), on how many spaces the interval
lies above 0 (+) and below 0 (-); the geometric mean over the spaces of the ratio of the median
e95 (configs to 0.95 of the optimum; a run that never gets there counts as never), and on how many
spaces its interval lies above 1 (slower to 0.95) and below 1; and the mean search seconds per run.
"""

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

BUDGETS = ["25", "50", "100", "200", "400"]
RESAMPLES = 2000


def read(directory):
    """{variant: {(group, space): {seed: line}}}."""
    runs = defaultdict(dict)
    for f in sorted(Path(directory).glob("*/*.jsonl")):
        group = f.stem.split("-", 1)[0]
        seeds = {}
        for text in f.read_text().splitlines():
            line = json.loads(text)
            seeds[line["seed"]] = line
        runs[f.parent.name][(group, f.stem.split("-", 1)[1])] = seeds
    return runs


def median_e95(lines):
    """The median of e95 over the runs, a run that never reached 0.95 as infinity."""
    values = sorted(math.inf if x["e95"] is None else x["e95"] for x in lines)
    return statistics.median(values)


def interval(stat, a, b, rng):
    """95% bootstrap interval of stat(a', b') over paired resamples of the seeds a and b share."""
    seeds = sorted(set(a) & set(b))
    draws = []
    for _ in range(RESAMPLES):
        pick = [rng.choice(seeds) for _ in seeds]
        draws.append(stat([a[s] for s in pick], [b[s] for s in pick]))
    draws.sort()
    return draws[int(0.025 * RESAMPLES)], draws[int(0.975 * RESAMPLES) - 1]


def mean_found(lines, budget):
    return statistics.fmean(x["found"][budget] for x in lines)


def e95_ratio(a, b):
    ma, mb = median_e95(a), median_e95(b)
    if math.isinf(ma) and math.isinf(mb):
        return 1.0
    return ma / mb


def compare(variant, reference, rng):
    """Per (group, space): the differences and intervals of `variant` against `reference`."""
    rows = {}
    for key, runs in variant.items():
        if key not in reference:
            continue
        ref = reference[key]
        seeds = sorted(set(runs) & set(ref))
        a = {s: runs[s] for s in seeds}
        b = {s: ref[s] for s in seeds}
        row = {"seeds": len(seeds), "found": {}, "search": statistics.fmean(x["search_seconds"] for x in a.values())}
        for budget in BUDGETS:
            if budget not in next(iter(a.values()))["found"]:
                continue
            diff = mean_found(a.values(), budget) - mean_found(b.values(), budget)
            lo, hi = interval(lambda x, y: mean_found(x, budget) - mean_found(y, budget), a, b, rng)
            row["found"][budget] = (diff, lo, hi)
        ratio = e95_ratio(list(a.values()), list(b.values()))
        lo, hi = interval(e95_ratio, a, b, rng)
        row["e95"] = (ratio, lo, hi, median_e95(a.values()), median_e95(b.values()))
        rows[key] = row
    return rows


def summary(rows, keys):
    """(cells per budget, e95 cell) over `keys`: mean difference [+above -below], and the geometric
    mean e95 ratio [+slower -faster]."""
    cells = []
    for budget in BUDGETS:
        got = [rows[k]["found"][budget] for k in keys if budget in rows[k]["found"]]
        if not got:
            cells.append("")
            continue
        mean = statistics.fmean(d for d, _, _ in got)
        cells.append(f"{fmt(mean)} (+{sum(lo > 0 for _, lo, _ in got)} -{sum(hi < 0 for _, _, hi in got)})")
    ratios = [rows[k]["e95"][0] for k in keys if math.isfinite(rows[k]["e95"][0]) and rows[k]["e95"][0] > 0]
    geo = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else math.nan
    slower = sum(rows[k]["e95"][1] > 1 for k in keys)
    faster = sum(rows[k]["e95"][2] < 1 for k in keys)
    return cells, f"{geo:.2f} (+{slower} -{faster})"


def markdown(runs, reference, ref_search, rng):
    print("| variant | spaces | " + " | ".join(f"B = {b}" for b in BUDGETS) + " | e95 ratio | search s per run |")
    print("|---|---|" + "---|" * len(BUDGETS) + "---|---|")
    print(f"| reference | {len(reference)} | " + " | ".join("" for _ in BUDGETS) + f" | 1 | {ref_search:.2f} |")
    for name in sorted(runs):
        if runs[name] is reference:
            continue
        rows = compare(runs[name], reference, rng)
        keys = sorted(rows)
        cells, e95 = summary(rows, keys)
        search = statistics.fmean(rows[k]["search"] for k in keys)
        print(f"| {name} | {len(keys)} | " + " | ".join(cells) + f" | {e95} | {search:.2f} |")


def fmt(x, digits=3):
    return "inf" if math.isinf(x) else f"{x:+.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory")
    parser.add_argument("--reference", default="default")
    parser.add_argument("--spaces", action="store_true", help="also one line per space")
    parser.add_argument("--markdown", action="store_true",
                        help="one Markdown row per variant over every space (the docs' table)")
    args = parser.parse_args()
    runs = read(args.directory)
    if args.reference not in runs:
        sys.exit(f"tpe_ablation.py: no runs of the reference {args.reference!r} in {args.directory}")
    rng = random.Random(1)
    reference = runs[args.reference]
    ref_search = statistics.fmean(x["search_seconds"] for r in reference.values() for x in r.values())
    groups = sorted({g for g, _ in reference})
    print(f"reference {args.reference}: mean search seconds per run {ref_search:.3f}; per group, the mean over "
          "its spaces of (variant - reference) mean found score, [+spaces above / -spaces below by 95% interval]; "
          "e95: geometric mean of the median e95 ratio [spaces slower / faster by 95% interval]")
    if args.markdown:
        markdown(runs, reference, ref_search, rng)
        return
    header = "variant              group  n   " + "  ".join(f"B={b:>3}          " for b in BUDGETS) + \
        "  e95 ratio       search s"
    print(header)
    for name in sorted(runs, key=lambda v: (v != args.reference, v)):
        if name == args.reference:
            continue
        rows = compare(runs[name], reference, rng)
        for group in groups:
            keys = [k for k in rows if k[0] == group]
            if not keys:
                continue
            cells = []
            for budget in BUDGETS:
                got = [rows[k]["found"][budget] for k in keys if budget in rows[k]["found"]]
                if not got:
                    cells.append(" " * 17)
                    continue
                mean = statistics.fmean(d for d, _, _ in got)
                up = sum(lo > 0 for _, lo, _ in got)
                down = sum(hi < 0 for _, _, hi in got)
                cells.append(f"{fmt(mean)} [+{up:<2}-{down:<2}]".ljust(17))
            ratios = [rows[k]["e95"][0] for k in keys if math.isfinite(rows[k]["e95"][0]) and rows[k]["e95"][0] > 0]
            geo = math.exp(statistics.fmean(math.log(r) for r in ratios)) if ratios else math.nan
            slower = sum(rows[k]["e95"][1] > 1 for k in keys)
            faster = sum(rows[k]["e95"][2] < 1 for k in keys)
            search = statistics.fmean(rows[k]["search"] for k in keys)
            print(f"{name:<20} {group:<6} {len(keys):<3} " + " ".join(cells) +
                  f" {geo:5.2f} [+{slower:<2}-{faster:<2}]  {search:8.3f}")
            if args.spaces:
                for k in sorted(keys):
                    r = rows[k]
                    f = " ".join(f"{fmt(r['found'][b][0])}" for b in BUDGETS if b in r["found"])
                    e = r["e95"]
                    print(f"    {k[1]:<40} {f}  e95 {e[3]} vs {e[4]} [{e[1]:.2f}, {e[2]:.2f}]")


if __name__ == "__main__":
    main()
