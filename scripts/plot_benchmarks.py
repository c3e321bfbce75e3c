#!/usr/bin/python3
"""Draws the figures of docs/benchmarks.md from the data files beside them.

usage: scripts/plot_benchmarks.py [--dir docs/figures]

Reads DIR/search_vs_peers.csv (the found score against the budget on the four recorded GPU spaces)
and DIR/kernels_vs_libraries.csv (the tuned conv2d against oneDNN and cuDNN per ResNet-18 layer)
and writes DIR/search_vs_peers.png and DIR/kernels_vs_libraries.png. The numbers in the CSVs are
copied from the tables of docs/benchmarks.md; change both together.

Needs python3-matplotlib (scripts/install-plot-deps.sh); the build and the tests do not.
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_benchmarks: matplotlib is missing (Debian: scripts/install-plot-deps.sh)")


def rows(path):
    """The CSV's rows as dicts; lines starting with # are comments."""
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


STYLE = {
    "tpe-gp-rf-restarts": dict(color="tab:blue", lw=2.4, marker="o"),
    "best peer": dict(color="black", lw=1.6, ls="--", marker="s"),
    "chameleon (plan 32)": dict(color="tab:green", lw=1.2, marker="^"),
    "autotvm (plan 32)": dict(color="tab:orange", lw=1.2, marker="v"),
    "random": dict(color="tab:gray", lw=1.2, ls=":", marker="."),
}


def search_vs_peers(src, out):
    series = defaultdict(lambda: defaultdict(list))  # space -> series -> [(B, found)]
    for r in rows(src):
        series[r["space"]][r["series"]].append((int(r["B"]), float(r["found"])))
    spaces = list(series)
    fig, axes = plt.subplots(1, len(spaces), figsize=(3.4 * len(spaces), 3.4), sharey=True)
    for ax, space in zip(axes, spaces):
        for name, points in series[space].items():
            points.sort()
            label = "best peer (PEERS.md, per cell)" if name == "best peer" else name
            ax.plot([b for b, _ in points], [v for _, v in points], label=label,
                    **STYLE.get(name, {}))
        ax.set_xscale("log", base=2)
        ax.set_xticks([25, 50, 100, 200, 400], labels=["25", "50", "100", "200", "400"])
        ax.set_title(space, fontsize=10)
        ax.set_xlabel("configurations measured")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("found score (median of 25 seeds)")
    axes[0].set_ylim(0.55, 1.01)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)


def kernels_vs_libraries(src, out):
    data = rows(src)
    layers = [k for k in data[0] if k.startswith("C")]
    panels = [("cpu", "CPU conv2d / oneDNN 2.6 (2 vCPUs)"), ("gpu", "CUDA conv2d / cuDNN 9.19 (H100, fp32)")]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [3, 2]})
    x = range(len(layers))
    for ax, (panel, title) in zip(axes, panels):
        mine = [r for r in data if r["panel"] == panel]
        for i, r in enumerate(mine):
            shift = (i - (len(mine) - 1) / 2) * 0.12  # side by side within a layer
            ax.plot([j + shift for j in x], [float(r[k]) for k in layers], marker="o", ms=5, ls="none",
                    label=r["series"])
        ax.axhline(1.0, color="black", lw=0.8)
        if panel == "cpu":
            ax.axhline(0.85, color="tab:red", lw=0.8, ls="--", label="issue 25's target, 0.85")
        else:
            ax.set_yscale("log", base=2)
            ax.set_yticks([0.25, 0.5, 1, 2, 4], labels=["0.25", "0.5", "1", "2", "4"])
        ax.set_xticks(list(x), labels=layers)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("speed ratio (above 1: tunekit faster)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "docs", "figures"))
    a = p.parse_args()
    for name, draw in (("search_vs_peers", search_vs_peers), ("kernels_vs_libraries", kernels_vs_libraries)):
        src, out = os.path.join(a.dir, name + ".csv"), os.path.join(a.dir, name + ".png")
        draw(src, out)
        print(f"wrote {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
