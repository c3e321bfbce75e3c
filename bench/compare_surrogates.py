#!/usr/bin/python3
"""tunekit's surrogates side by side with XGBoost and scikit-learn, on the same data with the same
hyperparameters: fit times (best of --repeats fits each) and the Spearman correlation of the
held-out predictions.

- GradientBoostedTrees against xgboost.train (reg:squarederror): max_depth 3, eta 0.3, lambda 1,
  gamma 1e-4, min_child_weight 1, base_score 0.5, alpha 0, no subsampling, exactly --rounds
  trees (tunekit without early stopping). Targets are divided by their maximum for XGBoost, as
  tunekit does inside fit(). tree_method "exact" up to 1024 training rows and "hist" with
  max_bin 256 above, as tunekit switches from exact greedy to 256 quantile bins
  (BinningParams::histogram_threshold).
- RandomForest against sklearn.ensemble.RandomForestRegressor: 100 trees, max_features
  round(d / 3) (tunekit: max_features 1/3 rounded), min_samples_leaf 1, bootstrap, unlimited
  depth. scikit-learn splits exactly at every size; tunekit uses 256 bins above 1024 rows.
- Threads: tunekit via omp_set_num_threads, XGBoost nthread, scikit-learn n_jobs.
- Data, rounded to float32 (what XGBoost and scikit-learn compute in) so that all three see the
  same values: Friedman's #1 function (sklearn's make_friedman1, noise sd 1) on n uniform rows
  in [0, 1)^d, d in {10, 30}, 2000 held-out rows (truth: the noiseless function); and the
  recorded GEMM space gemm_RTX_3090.csv (features: the 10 knobs that vary, target 1 / time_ms,
  n random rows for training, 4000 others held out).
- Timed: tunekit's fit(); XGBoost's DMatrix construction plus train(); scikit-learn's fit().
  Predict times likewise (XGBoost's includes its DMatrix).

Needs Debian's packages (not installed by scripts/install-deps.sh; CI does not run this):

    apt-get install -y python3-xgboost python3-sklearn python3-scipy python3-numpy

Run (from the repository root, with Debian's /usr/bin/python3):

    cmake --build build --target surrogate_compare
    /usr/bin/python3 bench/compare_surrogates.py --driver build/bench/surrogate_compare

It prints a markdown table. The ratio is tunekit's fit time over the reference's (below 1:
tunekit is faster).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.stats
import sklearn
import sklearn.ensemble
import xgboost

HISTOGRAM_THRESHOLD = 1024  # tunekit::BinningParams::histogram_threshold
MAX_BINS = 256  # tunekit::BinningParams::max_bins


def friedman1(x):
    return (10 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20 * (x[:, 2] - 0.5) ** 2 + 10 * x[:, 3]
            + 5 * x[:, 4])


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def synthetic(n, d, seed):
    rng = np.random.default_rng(seed)
    x = f32(rng.random((n, d)))
    y = f32(friedman1(x) + rng.standard_normal(n))
    q = f32(rng.random((2000, d)))
    return x, y, q, friedman1(q)


def gemm(path, n, seed):
    raw = np.genfromtxt(path, delimiter=",", names=True, usecols=range(16), dtype=np.float64)
    names = [c for c in raw.dtype.names if c != "time_ms"]
    x = np.column_stack([raw[c] for c in names])
    x = x[:, x.min(axis=0) != x.max(axis=0)]  # the knobs that vary
    y = 1.0 / raw["time_ms"]
    order = np.random.default_rng(seed).permutation(len(y))
    train, held = order[:n], order[n:n + 4000]
    return f32(x[train]), f32(y[train]), f32(x[held]), y[held]


def best_of(repeats, f):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


def write_csv(path, x, y=None):
    cols = [f"x{j}" for j in range(x.shape[1])]
    data = x if y is None else np.column_stack([x, y])
    np.savetxt(path, data, delimiter=",", fmt="%.17g",
               header=",".join(cols + ([] if y is None else ["y"])), comments="")


def tunekit_run(args, model, x, y, q, threads, tmp, extra):
    train, query, out = (os.path.join(tmp, f) for f in ("train.csv", "query.csv", "pred.txt"))
    write_csv(train, x, y)
    write_csv(query, q)
    cmd = [args.driver, "--model", model, "--train", train, "--query", query, "--out", out,
           "--threads", str(threads), "--repeats", str(args.repeats)] + extra
    line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    fields = dict(zip(line[::2], line[1::2]))
    return float(fields["fit_seconds"]), float(fields["predict_seconds"]), np.loadtxt(out)


def xgboost_run(args, x, y, q, threads):
    params = {"objective": "reg:squarederror", "max_depth": 3, "eta": 0.3, "lambda": 1.0,
              "alpha": 0.0, "gamma": 1e-4, "min_child_weight": 1.0, "base_score": 0.5,
              "subsample": 1.0, "colsample_bytree": 1.0, "nthread": threads, "verbosity": 0,
              "tree_method": "exact" if len(y) <= HISTOGRAM_THRESHOLD else "hist",
              "max_bin": MAX_BINS}
    yn = y / y.max() if y.max() > 0 else y
    fit_s, booster = best_of(args.repeats, lambda: xgboost.train(
        params, xgboost.DMatrix(x, label=yn, nthread=threads), num_boost_round=args.rounds))
    predict_s, pred = best_of(args.repeats, lambda: booster.predict(
        xgboost.DMatrix(q, nthread=threads)))
    return fit_s, predict_s, pred


def sklearn_run(args, x, y, q, threads, seed):
    d = x.shape[1]
    make = lambda: sklearn.ensemble.RandomForestRegressor(
        n_estimators=100, max_features=max(1, round(d / 3)), min_samples_leaf=1, bootstrap=True,
        n_jobs=threads, random_state=seed)
    fit_s, forest = best_of(args.repeats, lambda: make().fit(x, y))
    predict_s, pred = best_of(args.repeats, lambda: forest.predict(q))
    return fit_s, predict_s, pred


def spearman(a, b):
    return scipy.stats.spearmanr(a, b).correlation


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--driver", default="build/bench/surrogate_compare")
    p.add_argument("--dataset", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "datasets",
        "gemm_RTX_3090.csv"))
    p.add_argument("--repeats", type=int, default=5, help="fits timed per model; best reported")
    p.add_argument("--rounds", type=int, default=100, help="boosting rounds")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--models", default="boosting,forest")
    p.add_argument("--sizes", default="100,500,2000,10000")
    p.add_argument("--dims", default="10,30")
    p.add_argument("--gemm-sizes", default="500,2000")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]
    cases = [("friedman1", n, d) for n in map(int, args.sizes.split(",")) if n > 0
             for d in map(int, args.dims.split(","))]
    if os.path.exists(args.dataset):
        cases += [("gemm_RTX_3090", n, 10) for n in map(int, args.gemm_sizes.split(",")) if n > 0]
    else:
        print(f"({args.dataset} not found: synthetic data only)", file=sys.stderr)

    print(f"xgboost {xgboost.__version__}, scikit-learn {sklearn.__version__}; best of "
          f"{args.repeats} fits; boosting {args.rounds} rounds\n")
    print("| model | data | n | d | threads | tunekit fit s | reference fit s | ratio | "
          "tunekit predict ms | reference predict ms | Spearman tunekit vs reference | "
          "Spearman vs truth: tunekit / reference |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for data, n, d in cases:
                if data == "friedman1":
                    x, y, q, truth = synthetic(n, d, args.seed)
                else:
                    x, y, q, truth = gemm(args.dataset, n, args.seed)
                    d = x.shape[1]
                for threads in threads_list:
                    if model == "boosting":
                        extra = ["--rounds", str(args.rounds)]
                        ours = tunekit_run(args, "boosting", x, y, q, threads, tmp, extra)
                        ref = xgboost_run(args, x, y, q, threads)
                        ref_name = "XGBoost"
                    else:
                        ours = tunekit_run(args, "forest", x, y, q, threads, tmp,
                                           ["--seed", str(args.seed)])
                        ref = sklearn_run(args, x, y, q, threads, args.seed)
                        ref_name = "sklearn RF"
                    print(f"| {model} vs {ref_name} | {data} | {n} | {d} | {threads} | "
                          f"{ours[0]:.4f} | {ref[0]:.4f} | {ours[0] / ref[0]:.2f} | "
                          f"{ours[1] * 1e3:.2f} | {ref[1] * 1e3:.2f} | "
                          f"{spearman(ours[2], ref[2]):.4f} | "
                          f"{spearman(ours[2], truth):.4f} / {spearman(ref[2], truth):.4f} |",
                          flush=True)


if __name__ == "__main__":
    main()
