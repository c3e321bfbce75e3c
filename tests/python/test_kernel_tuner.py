"""tunekit.kernel_tuner.Strategy inside the vendored Kernel Tuner 1.4.0, in simulation mode.

test_strategy_checks does what Kernel Tuner's test/strategies/test_strategies.py checks of each of
its strategies, on its vector_add space, restrictions and cache file, with the tunekit strategy in
place of theirs. test_replayed_dataset_scores_as_tunekit_replay replays a recorded space
(shared/datasets) as a Kernel Tuner cache.
"""

import csv
import importlib.util
import json
import math
import statistics
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tunekit as tk

ROOT = Path(__file__).resolve().parents[2]

VECTOR_ADD = """
__global__ void vector_add(float *c, float *a, float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i<n) {
        c[i] = a[i] + b[i];
    }
}
"""


@pytest.fixture
def kt(vendor):
    import kernel_tuner
    import tunekit.kernel_tuner

    return kernel_tuner, tunekit.kernel_tuner


@pytest.fixture
def vector_add():
    size = 100
    a = np.random.randn(size).astype(np.float32)
    b = np.random.randn(size).astype(np.float32)
    c = np.zeros_like(b)
    n = np.int32(size)
    tune_params = dict()
    tune_params["block_size_x"] = [128 + 64 * i for i in range(15)]
    tune_params["test_string"] = ["alg_1", "alg_2"]
    tune_params["test_single"] = [15]
    tune_params["test_bool"] = [True, False]
    tune_params["test_mixed"] = ["test", 1, True, 2.45]
    return ["vector_add", VECTOR_ADD, size, [c, a, b, n], tune_params]


RESTRICTIONS = ["test_string == 'alg_2'", "test_bool == True", "test_mixed == 2.45"]


def cache_file(vendor):
    return vendor / "kernel_tuner" / "test" / "strategies" / "test_cache_file.json"


@pytest.mark.parametrize("preset", ["tpe-local", "tpe-gp-rf-restarts", "autotvm", "random"])
def test_strategy_checks(kt, vendor, vector_add, preset):
    kernel_tuner, tkt = kt
    from kernel_tuner.util import InvalidConfig

    options = dict(max_fevals=10)
    results, _ = kernel_tuner.tune_kernel(*vector_add, restrictions=RESTRICTIONS, strategy=tkt.Strategy(preset),
                                          strategy_options=options, verbose=False, cache=cache_file(vendor),
                                          simulation_mode=True)
    assert len(results) > 0
    tune_params = vector_add[-1]
    unique_results = {}
    for result in results:
        x_int = ",".join([str(v) for k, v in result.items() if k in tune_params.keys()])
        if not isinstance(result["time"], InvalidConfig):
            unique_results[x_int] = result["time"]
    assert len(unique_results) <= options["max_fevals"]
    # This strategy measures no config twice, and spends the budget.
    assert len(results) == len(unique_results) == 10

    expected_items = {
        "block_size_x": int, "time": (float, int), "times": list, "compile_time": (float, int),
        "verification_time": (float, int), "benchmark_time": (float, int), "strategy_time": (float, int),
        "framework_time": (float, int), "timestamp": str, "test_string": str, "test_single": int,
        "test_bool": bool, "test_mixed": float,
    }
    for res in results:
        assert len(res) == len(expected_items)
        for expected_key, expected_type in expected_items.items():
            assert expected_key in res
            assert isinstance(res[expected_key], expected_type)
        # Kernel Tuner's restrictions hold (True and 1 are told apart: test_mixed has both).
        assert res["test_string"] == "alg_2" and res["test_bool"] is True and res["test_mixed"] == 2.45

    # The user's starting point (x0) is measured first.
    options["x0"] = [256, "alg_2", 15, True, 2.45]
    results, _ = kernel_tuner.tune_kernel(*vector_add, restrictions=RESTRICTIONS, strategy=tkt.Strategy(preset),
                                          strategy_options=options, verbose=False, cache=cache_file(vendor),
                                          simulation_mode=True)
    assert results[0]["block_size_x"] == 256


def test_budget_exhaustion_time_limit_and_options(kt, vendor, vector_add):
    kernel_tuner, tkt = kt
    common = dict(restrictions=RESTRICTIONS, verbose=False, cache=cache_file(vendor), simulation_mode=True)
    # max_fevals beyond the 15 valid configs: each measured once, the best one found.
    strategy = tkt.Strategy("tpe-local", seed=4)
    results, _ = kernel_tuner.tune_kernel(*vector_add, strategy=strategy, strategy_options=dict(max_fevals=100),
                                          **common)
    assert sorted(r["block_size_x"] for r in results) == vector_add[-1]["block_size_x"]
    assert len(strategy.tuner.history) == 15
    assert strategy.tuner.best.config["block_size_x"] == min(results, key=lambda r: r["time"])["block_size_x"]
    # time_limit: in simulation mode each config costs its cached compile and benchmark time
    # (about 0.44 s in this cache), so 2 s of budget stops the search after a few configs.
    results, _ = kernel_tuner.tune_kernel(*vector_add, strategy=tkt.Strategy("tpe-local"),
                                          strategy_options=dict(time_limit=2), **common)
    assert 1 <= len(results) < 15
    with pytest.raises(ValueError, match=r"Unrecognized option popsize in strategy_options"):
        kernel_tuner.tune_kernel(*vector_add, strategy=tkt.Strategy(), strategy_options=dict(popsize=5), **common)
    with pytest.raises(ValueError, match=r"^Strategy: unknown tuner preset 'nope' \(available: tpe, tpe-local, "):
        tkt.Strategy("nope")


def test_failed_configs_are_told_as_failures(kt, tmp_path):
    kernel_tuner, tkt = kt
    tune_params = {"block_size_x": [32, 64, 128, 256], "unroll": [0, 1, 2]}
    cache = {}
    for bx in tune_params["block_size_x"]:
        for u in tune_params["unroll"]:
            entry = {"block_size_x": bx, "unroll": u, "compile_time": 1.0, "verification_time": 0,
                     "benchmark_time": 1.0, "strategy_time": 0, "framework_time": 0, "timestamp": "2024-01-01"}
            if u == 2:
                entry["time"] = "CompilationFailedConfig"
            elif bx == 256:
                entry["time"] = "RuntimeFailedConfig"
            else:
                t = 1.0 + abs(bx - 64) / 64 + u * 0.1
                entry["time"], entry["times"] = t, [t, t]
            cache[f"{bx},{u}"] = entry
    path = tmp_path / "failing.json"
    path.write_text(json.dumps({"device_name": "sim", "kernel_name": "k", "problem_size": 100,
                                "tune_params_keys": list(tune_params), "tune_params": tune_params, "objective": "time",
                                "cache": cache}))
    strategy = tkt.Strategy("tpe-local", seed=1)
    results, _ = kernel_tuner.tune_kernel("k", "__global__ void k() {}", 100, [], tune_params, strategy=strategy,
                                          strategy_options=dict(max_fevals=12), verbose=False, cache=str(path),
                                          simulation_mode=True)
    assert len(results) == 12
    statuses = {(t.config["block_size_x"], t.config["unroll"]): t.measurement.status for t in strategy.tuner.history}
    assert len(statuses) == 12
    for (bx, u), status in statuses.items():
        if u == 2:
            assert status == tk.Status.build_error
        elif bx == 256:
            assert status == tk.Status.runtime_error
        else:
            assert status == tk.Status.ok
    assert strategy.tuner.best.config == {"block_size_x": 64, "unroll": 0}


def dataset_as_cache(csv_path, out):
    """A shared/datasets CSV as a Kernel Tuner cache file, by bench/kt_peers.py's function, without
    "times" (Kernel Tuner's simulation answers with "time" alone; tunekit-replay then replays that
    one time too). Returns the tune_params and the recorded configs (the restriction that admits
    exactly them)."""
    spec = importlib.util.spec_from_file_location("kt_peers", ROOT / "bench" / "kt_peers.py")
    kt_peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kt_peers)
    tune_params, recorded = kt_peers.dataset_as_cache(csv_path, out, samples=False)[:2]
    return tune_params, set(recorded)


def test_replayed_dataset_scores_as_tunekit_replay(kt, datasets, replay_bin, tmp_path):
    """convolution_A4000 (shared/datasets) as a Kernel Tuner cache, tuned in Kernel Tuner's
    simulation mode by Strategy("tpe-local"), and replayed from the same cache file by
    tunekit-replay --tuner tpe-local: for each seed both measure the same configs in the same
    order, so they reach the same score (the found score of PEERS.md: best recorded time of the
    space / best recorded time among the configs measured), equal to rounding (1e-12).

    Why identical and not "within a tolerance": both are told each config's recorded mean (Kernel
    Tuner's simulation answers with the cache's "time"; tunekit-replay replays the one time the
    cache has per config, so its evaluator's repeats all return it), over the same space (the
    strategy builds its knobs from the values as tunekit-replay does, and a membership constraint
    of Kernel Tuner's valid configs, here the recorded ones) and the same generator use. On the CSV
    itself tunekit-replay draws recorded samples (noise) and the paths part after the first noisy
    ranking, so only a distribution over seeds could be compared there."""
    kernel_tuner, tkt = kt
    dataset = datasets / "convolution_A4000.csv"
    budget, seeds = 60, 4
    cache = tmp_path / "convolution_A4000.json"
    tune_params, recorded = dataset_as_cache(dataset, cache)
    names = list(tune_params)
    kernel = tk.ReplayKernel.load(cache)
    assert kernel.row_count == len(recorded) == tk.ReplayKernel.load(dataset).row_count

    out, summary = tmp_path / "trials.csv", tmp_path / "summary.json"
    subprocess.run([str(replay_bin), "--dataset", str(cache), "--tuner", "tpe-local", "--budget", str(budget),
                    "--seeds", str(seeds), "--quiet", "--out", str(out), "--summary-json", str(summary)],
                   check=True, capture_output=True)
    replay_trials = {}
    with open(out) as f:
        for row in csv.DictReader(f):
            replay_trials.setdefault(int(row["seed"]), []).append(row)

    def recorded_only(p):
        """Kernel Tuner's (old-style, one dict) restriction: the recorded configs. A def, not a
        lambda: Kernel Tuner rewrites lambdas from their source text."""
        return tuple(p[n] for n in names) in recorded

    def parse(text):
        """A config as tunekit-replay's --out writes it (SearchSpace.describe: "name=value;...")."""
        return {k: int(v) for k, v in (item.split("=") for item in text.split(";"))}

    found, found_at_50 = [], []
    for seed in range(seeds):
        strategy = tkt.Strategy("tpe-local", seed=seed)
        results, _ = kernel_tuner.tune_kernel(
            dataset.stem, "__global__ void k() {}", 0, [], tune_params, restrictions=recorded_only,
            strategy=strategy, strategy_options=dict(max_fevals=budget), verbose=False, cache=str(cache),
            simulation_mode=True)
        assert len(results) == budget
        history = strategy.tuner.history
        space = strategy.tuner.space
        assert [space.describe(t.config) for t in history] == [r["config"] for r in replay_trials[seed]]
        assert [str(t.measurement.status) for t in history] == [f"Status.{r['status']}" for r in replay_trials[seed]]
        times = [r["time"] if isinstance(r["time"], float) else math.inf for r in results]
        found.append(kernel.optimum_ms / min(times))
        found_at_50.append(kernel.optimum_ms / min(times[:50]))
        replay_found = kernel.optimum_ms / min(kernel.recorded_ms(parse(r["config"])) for r in replay_trials[seed])
        assert found[-1] == pytest.approx(replay_found, rel=1e-12)
    # tunekit-replay's summary (median over seeds at the checkpoint of 50 trials) from the strategy's results.
    s = json.loads(summary.read_text())
    assert statistics.median(found_at_50) == pytest.approx(s["found_score_median"]["50"], rel=1e-12)


def replay_configs(replay_bin, cache, preset, budget, seeds, plan_size, tmp_path):
    """tunekit-replay's trials on a cache file: {seed: [config text, ...]} for seeds 0..seeds-1."""
    out = tmp_path / f"trials_{preset}.csv"
    subprocess.run([str(replay_bin), "--dataset", str(cache), "--tuner", preset, "--budget", str(budget),
                    "--seeds", str(seeds), "--plan-size", str(plan_size), "--quiet", "--out", str(out)],
                   check=True, capture_output=True)
    trials = {}
    with open(out) as f:
        for row in csv.DictReader(f):
            trials.setdefault(int(row["seed"]), []).append(row["config"])
    return trials


def strategy_configs(kernel_tuner, strategy, dataset, cache, tune_params, recorded, budget, **tune_kernel_args):
    """The configs Strategy measured inside Kernel Tuner (simulation mode, restricted to the
    recorded configs), as tunekit-replay's --out writes them."""
    names = list(tune_params)

    def recorded_only(p):
        return tuple(p[n] for n in names) in recorded

    results, _ = kernel_tuner.tune_kernel(
        dataset.stem, "__global__ void k() {}", 0, [], tune_params, restrictions=recorded_only, strategy=strategy,
        strategy_options=dict(max_fevals=budget), verbose=False, cache=str(cache), simulation_mode=True,
        **tune_kernel_args)
    assert len(results) == budget
    return [strategy.tuner.space.describe(t.config) for t in strategy.tuner.history]


# Every preset, on convolution_A100 (and the default on gemm_RTX_3090 too): budget 70 with plan_size 16
# takes the model-based presets through four model rounds and the tpe-* ones through their model
# starts (the default's 60 trials included).
PRESET_CASES = [("convolution_A100", p) for p in tk.preset_names()] + [("gemm_RTX_3090", tk.DEFAULT_PRESET)]


@pytest.mark.parametrize("dataset_name,preset", PRESET_CASES)
def test_every_preset_makes_the_replays_trials(kt, datasets, replay_bin, tmp_path, dataset_name, preset):
    """Strategy(preset, seed=s, plan_size=p) inside Kernel Tuner measures the configs that
    tunekit-replay --tuner preset --plan-size p measures with seed s, in the same order, on the same
    cache (one time per config), as the strategy's docstring says: adatune for its first round
    only (its adaptive evaluator's mean, the replayed runs' sum over their count, differs from the
    one time in the last bits, and its forest's splits turn on such bits)."""
    kernel_tuner, tkt = kt
    dataset = datasets / f"{dataset_name}.csv"
    budget, plan_size, seed = 70, 16, 0
    cache = tmp_path / f"{dataset_name}.json"
    tune_params, recorded = dataset_as_cache(dataset, cache)
    replayed = replay_configs(replay_bin, cache, preset, budget, 1, plan_size, tmp_path)[seed]
    mine = strategy_configs(kernel_tuner, tkt.Strategy(preset, seed=seed, plan_size=plan_size), dataset, cache,
                            tune_params, recorded, budget)
    if preset == "adatune":
        assert mine[:plan_size] == replayed[:plan_size]
    else:
        assert mine == replayed


def test_seed_rule(kt, datasets, tmp_path):
    """The seed is Strategy's seed=, else tune_kernel's seed=, else a draw from numpy's global
    generator: numpy.random.seed(s) reproduces a run, and unseeded runs differ."""
    import numpy

    kernel_tuner, tkt = kt
    dataset = datasets / "convolution_A100.csv"
    cache = tmp_path / "convolution_A100.json"
    tune_params, recorded = dataset_as_cache(dataset, cache)
    budget = 12

    def run(strategy, **args):
        return strategy_configs(kernel_tuner, strategy, dataset, cache, tune_params, recorded, budget, **args)

    fixed = tkt.Strategy("random", seed=5)
    assert run(fixed) == run(tkt.Strategy("random"), seed=5) == run(tkt.Strategy("random", seed=5), seed=6)
    assert fixed.last_seed == 5
    numpy.random.seed(3)
    first = tkt.Strategy("random")
    a = run(first)
    numpy.random.seed(3)
    again = tkt.Strategy("random")
    assert run(again) == a and again.last_seed == first.last_seed
    numpy.random.seed(4)
    other = tkt.Strategy("random")
    assert run(other) != a and other.last_seed != first.last_seed
    # The seed of an unseeded run reproduces it.
    assert run(tkt.Strategy("random", seed=first.last_seed)) == a


def test_bad_options_fail_at_construction(kt):
    _, tkt = kt
    with pytest.raises(TypeError, match=r"Strategy: seed must be an int in \[0, 2\*\*64\) or None, not 'a'"):
        tkt.Strategy(seed="a")
    with pytest.raises(TypeError, match="not True"):
        tkt.Strategy(seed=True)
    with pytest.raises(ValueError, match=r"not -1"):
        tkt.Strategy(seed=-1)
    with pytest.raises(ValueError, match=r"Strategy: plan_size must be an int >= 1, not 0"):
        tkt.Strategy(plan_size=0)
    with pytest.raises(ValueError, match=r"^Strategy: unknown tuner preset 3 "):
        tkt.Strategy(3)


def test_another_objective_ranks_as_kernel_tuner_does(kt, vendor, vector_add):
    """With a metric to maximise (GFLOP/s) as the objective, the tuner's best is Kernel Tuner's best."""
    kernel_tuner, tkt = kt
    strategy = tkt.Strategy("tpe-local", seed=2)
    metrics = {"GFLOP/s": lambda p: 1e-6 * p["block_size_x"] / p["time"]}
    results, _ = kernel_tuner.tune_kernel(*vector_add, restrictions=RESTRICTIONS, strategy=strategy,
                                          strategy_options=dict(max_fevals=15), verbose=False,
                                          cache=cache_file(vendor), simulation_mode=True, metrics=metrics,
                                          objective="GFLOP/s", objective_higher_is_better=True)
    best = max(results, key=lambda r: r["GFLOP/s"])
    assert strategy.tuner.best.config["block_size_x"] == best["block_size_x"]
    means = {t.config["block_size_x"]: t.measurement.mean for t in strategy.tuner.history}
    order_kt = sorted(results, key=lambda r: -r["GFLOP/s"])
    assert [r["block_size_x"] for r in order_kt] == sorted(means, key=means.get)
