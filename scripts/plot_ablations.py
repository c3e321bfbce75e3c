#!/usr/bin/python3
"""Draws the CSVs of ablation_adatune, ablation_chameleon and ablation_dynatune as PNG figures in
the style of the papers: per pipeline the median over seeds as a line and a 95% confidence band
of the median (the same distribution-free order statistics as the programs print).

usage: scripts/plot_ablations.py [--adatune ablation_adatune.csv] [--chameleon ablation_chameleon.csv]
                                 [--dynatune ablation_dynatune.csv] [--out-dir docs/figures]
                                 [--tag NAME] [--live]

--tag NAME puts NAME into the file names (adatune_NAME_gflops_vs_trials.png, ...); --live labels
the axes for the programs' --kernel runs (measured GFLOPS, real seconds) instead of replays.

Needs python3-matplotlib (scripts/install-plot-deps.sh); the build and tests do not.
"""
import argparse
import csv
import math
import os
import sys
from collections import defaultdict

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_ablations: matplotlib is missing (Debian: scripts/install-plot-deps.sh)")


def median_ci(values, level=0.95):
    """Median and order statistics x_(l), x_(n+1-l) (as examples/ablation.hpp median_ci)."""
    v = sorted(values)
    n = len(v)
    mid = (n - 1) / 2
    med = v[int(mid)] if mid == int(mid) else (v[int(mid)] + v[int(mid) + 1]) / 2
    def cdf(k):
        return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    l = 1
    for cand in range(2, n // 2 + 1):
        if 1 - 2 * cdf(cand - 1) < level:
            break
        l = cand
    return med, v[l - 1], v[n - l]


def curves(rows, key_fields, x_field, y_field):
    """{key: {x: [values over seeds]}}."""
    out = defaultdict(lambda: defaultdict(list))
    for r in rows:
        out[tuple(r[k] for k in key_fields)][float(r[x_field])].append(float(r[y_field]))
    return out


def band(ax, series, label, color):
    """Median line and CI band; an infinite value (a run with nothing measured yet) counts in the
    order statistics, and points whose median is infinite are not drawn (nor band ends that are)."""
    xs = [x for x in sorted(series) if math.isfinite(median_ci(series[x])[0])]
    if not xs:
        return
    stats = [median_ci(series[x]) for x in xs]
    fin = lambda v: v if math.isfinite(v) else float("nan")
    med = [s[0] for s in stats]
    lo = [fin(s[1]) for s in stats]
    hi = [fin(s[2]) for s in stats]
    ax.plot(xs, med, label=label, color=color, linewidth=1.6)
    ax.fill_between(xs, lo, hi, color=color, alpha=0.18, linewidth=0)


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_single_task(path, out_dir, study, metric, ylabel, live):
    rows = read(path)
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    pipelines = list(dict.fromkeys(r["pipeline"] for r in rows))
    files = []
    seconds = "tuning seconds (measuring + searching)" if live else "simulated tuning seconds"
    for axis, xlabel in (("trials", "measured configurations"), ("seconds", seconds)):
        sub = [r for r in rows if r["axis"] == axis]
        c = curves(sub, ("dataset", "pipeline"), "x", metric)
        fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.4), squeeze=False)
        for ax, d in zip(axes[0], datasets):
            for i, p in enumerate(pipelines):
                if (d, p) in c:
                    band(ax, c[(d, p)], p, COLORS[i % len(COLORS)])
            ax.set_title(d)
            ax.set_xlabel(xlabel)
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel(ylabel)
        axes[0][-1].legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        name = os.path.join(out_dir, f"{study}_{metric}_vs_{axis}.png")
        fig.savefig(name, dpi=110)
        plt.close(fig)
        files.append(name)
    return files


def plot_dynatune(path, out_dir, study, live):
    rows = [r for r in read(path) if r["objective_ms"] != "nan"]
    pipelines = list(dict.fromkeys(r["pipeline"] for r in rows))
    c = curves(rows, ("pipeline",), "seconds", "objective_ms")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, p in enumerate(pipelines):
        series = {x: v for x, v in c[(p,)].items()}
        if series:
            band(ax, series, p, COLORS[i % len(COLORS)])
    ax.set_xlabel(("measuring seconds" if live else "simulated tuning seconds") + " (all operators)")
    ax.set_ylabel("model latency: sum of operator latencies (ms)" if live else
                  "model latency: held configs' recorded means (ms)")
    ax.set_title("schedulers on ResNet-18 layers (live CPU conv2d)" if live else
                 "schedulers on the four recorded operators")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = os.path.join(out_dir, f"{study}_latency_vs_seconds.png")
    fig.savefig(name, dpi=110)
    plt.close(fig)
    return [name]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adatune")
    ap.add_argument("--chameleon")
    ap.add_argument("--dynatune")
    ap.add_argument("--out-dir", default="docs/figures")
    ap.add_argument("--tag", default="")
    ap.add_argument("--live", action="store_true")
    a = ap.parse_args()
    tag = f"_{a.tag}" if a.tag else ""
    os.makedirs(a.out_dir, exist_ok=True)
    files = []
    if a.adatune:
        files += plot_single_task(a.adatune, a.out_dir, "adatune" + tag, "gflops",
                                  "best GFLOPS (measured)" if a.live else "best GFLOPS (recorded)", a.live)
    if a.chameleon:
        files += plot_single_task(a.chameleon, a.out_dir, "chameleon" + tag, "score",
                                  "score (best time of all runs / best)" if a.live else "score (best / optimum)", a.live)
    if a.dynatune:
        files += plot_dynatune(a.dynatune, a.out_dir, "dynatune" + tag, a.live)
    for f in files:
        print(f)


if __name__ == "__main__":
    main()
