"""bench/peer_bar.py and bench/optuna_peers.py: the found score they compute, against a hand
computation on a small space and against tunekit-replay's own summary on a recorded one; and the
reader of recorded spaces the peer scripts share (bench/kt_peers.py: read_recorded) on Kernel
Tuner caches, gzipped or not."""

import gzip
import importlib.util
import itertools
import json
import math
import random
import subprocess
import sys
import warnings

import pytest

from conftest import ROOT


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay_with_peer_bar(replay_bin, path, tmp_path, dataset, *args):
    """tunekit-replay on `path` with `args` (and --quiet, --out, --summary-json): peer_bar's curves
    of its --out on `dataset` (peer_bar.read_dataset's), and its summary."""
    out, summary = tmp_path / "trials.csv", tmp_path / "summary.json"
    subprocess.run([str(replay_bin), "--dataset", str(path), *args, "--quiet", "--out", str(out),
                    "--summary-json", str(summary)], check=True, capture_output=True)
    return load("peer_bar").tunekit_curves(out, dataset), json.loads(summary.read_text())


def assert_found_medians_match(curves, summary):
    """peer_bar's found-score median of `curves` equals the summary's at each of its budgets."""
    peer_bar = load("peer_bar")
    for b, value in summary["found_score_median"].items():
        assert peer_bar.median_at(curves, int(b)) == pytest.approx(value, abs=1e-9)


# A 3 x 3 space of which 6 configs were recorded, one of them failed; c is constant.
SMALL = """a,b,c,time_ms,samples
1,1,7,4.0,4.0
1,2,7,2.0,2.0
1,3,7,inf,
2,1,7,8.0,8.0
2,2,7,1.0,1.0
3,3,7,5.0,5.0
"""


def test_peer_bar_found_curve_by_hand(tmp_path):
    """tunekit-replay --out names the knobs of more than one value only; the curve is the best
    recorded time so far over the optimum (0 until a config ran)."""
    peer_bar = load("peer_bar")
    csv = tmp_path / "small.csv"
    csv.write_text(SMALL)
    trials = tmp_path / "trials.csv"
    trials.write_text("seed,trial,config\n"
                      "0,1,a=1;b=3\n0,2,a=2;b=1\n0,3,a=1;b=2\n0,4,a=2;b=2\n"
                      "1,1,a=2;b=2\n1,2,a=1;b=1\n")
    curves = peer_bar.tunekit_curves(trials, peer_bar.read_dataset(csv))
    assert curves == [[0.0, 1 / 8, 1 / 2, 1.0], [1.0, 1.0]]

    # A varying knob missing from the configs is an error, not a silent mismatch.
    trials.write_text("seed,trial,config\n0,1,a=1\n")
    with pytest.raises(SystemExit, match="lack knobs"):
        peer_bar.tunekit_curves(trials, peer_bar.read_dataset(csv))


def test_peer_bar_e95_ratio_by_hand():
    """firsts_to counts the configs each run measured to reach a level (inf: never); the e95 ratio
    is the medians' ratio, with a bootstrap interval that holds it and the resampled medians'
    range, and a run that never gets there neither passes for a fast one nor divides by 0."""
    peer_bar = load("peer_bar")
    ours = [[0.5, 0.96], [0.5, 0.7, 0.8, 0.99], [0.5, 0.6]]
    assert peer_bar.firsts_to(ours, 0.95) == [2, 4, math.inf]
    assert peer_bar.firsts_to(ours, 0.99) == [math.inf, 4, math.inf]
    theirs = [[0.1] * 7 + [1.0]] * 3  # 8 configs to the optimum, every run
    rng = random.Random(1)
    r, lo, hi = peer_bar.ratio_interval(peer_bar.firsts_to(ours, 0.95), peer_bar.firsts_to(theirs, 0.95), rng)
    assert r == 0.5
    # Resampled, our median is 2, 4 or inf: the interval's ends are among 2/8, 4/8 and inf.
    assert lo in (0.25, 0.5) and hi in (0.5, math.inf) and lo <= r <= hi
    assert peer_bar.ratio_interval([math.inf] * 3, [8] * 3, rng) == (math.inf, math.inf, math.inf)
    assert peer_bar.ratio_interval([4] * 3, [math.inf] * 3, rng) == (0.0, 0.0, 0.0)
    assert peer_bar.ratio_interval([4, 4, 6], [8, 8, 8], rng) == (0.5, 0.5, 0.75)


def test_peer_bar_matches_tunekit_replay_summary(datasets, replay_bin, tmp_path):
    """On convolution_A4000, the found-score medians peer_bar computes from a --out file equal
    tunekit-replay's own (its summary JSON), at every budget of the run."""
    peer_bar = load("peer_bar")
    csv = datasets / "convolution_A4000.csv"
    curves, summary = replay_with_peer_bar(replay_bin, csv, tmp_path, peer_bar.read_dataset(csv),
                                           "--seeds", "5", "--budget", "50")
    assert len(curves) == 5 and all(len(c) == 50 for c in curves)
    assert set(summary["found_score_median"]) == {"25", "50"}
    assert_found_medians_match(curves, summary)


def test_optuna_peers_counts_recorded_configs_only(tmp_path):
    """Combinations outside the recorded set and repeats do not count toward the budget: each
    point of the curve is a new recorded config (the failed one included, scoring 0 while nothing
    ran), so a budget below Optuna's 10 random start-up trials is met exactly, and a run never
    counts more configs than were recorded."""
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    optuna_peers = load("optuna_peers")
    csv = tmp_path / "small.csv"
    csv.write_text(SMALL)
    names, recorded, optimum, _ = optuna_peers.read_space(csv)
    assert names == ["a", "b", "c"] and optimum == 1.0 and len(recorded) == 6
    scores = {0.0} | {optimum / t for t in recorded.values() if math.isfinite(t)}
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)  # multivariate
    for multivariate in (False, True):
        for seed in range(2):
            assert len(optuna_peers.run(optuna, names, recorded, optimum, 3, seed, multivariate, 60)) == 3
            curve = optuna_peers.run(optuna, names, recorded, optimum, 7, seed, multivariate, 100)
            assert 3 <= len(curve) <= 6
            assert all(x <= y for x, y in zip(curve, curve[1:]))
            assert set(curve) <= scores


def test_optuna_peers_scores_a_run_that_met_no_recorded_config_as_0(tmp_path):
    """A sparse space: the diagonal of a 6 x 6 x 6 product recorded (6 of 216 configs, one of
    them ran). A run of 10 trials (Optuna's random start) mostly meets none of them; such a run is
    an empty curve, scored 0 at every budget, and the script reports it instead of stopping."""
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    optuna_peers = load("optuna_peers")
    names = ["a", "b", "c"]
    recorded = {(v, v, v): (2.0 if v == 5 else math.inf) for v in range(6)}
    curves = [optuna_peers.run(optuna, names, recorded, 2.0, 5, seed, False, 10) for seed in range(20)]
    empty = sum(c == [] for c in curves)
    assert 0 < empty < 20
    assert optuna_peers.score_at([], 25) == 0.0
    assert optuna_peers.score_at([0.0, 0.5, 1.0], 2) == 0.5
    assert optuna_peers.score_at([0.0, 0.5], 400) == 0.5

    # The whole script on the same space: it ends normally and counts the empty runs.
    csv = tmp_path / "diagonal.csv"
    csv.write_text("a,b,c,time_ms,samples\n" + "".join(
        f"{v},{v},{v},{'2.0,2.0' if v == 5 else 'inf,'}\n" for v in range(6)))
    out = tmp_path / "optuna.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "optuna_peers.py"), "--dataset", str(csv),
                           "--seeds", "20", "--budget", "5", "--max-trials", "10", "--samplers", "tpe",
                           "--json", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    row = json.loads(out.read_text())["optuna_tpe"]
    assert row["empty_runs"] == empty
    assert f"{empty} of 20 runs met no recorded config" in done.stdout


def test_peer_scripts_read_a_gzipped_or_open_cache_as_the_dataset_it_holds(tmp_path):
    """kt_peers.read_recorded (which all three scripts read spaces by) on a Kernel Tuner cache made
    from SMALL, gzipped or not, and on the same cache cut off as Kernel Tuner leaves one it is still
    writing: the same knobs, values, means and samples as on SMALL itself."""
    kt_peers = load("kt_peers")
    csv = tmp_path / "small.csv"
    csv.write_text(SMALL)
    expected = kt_peers.read_recorded(csv)
    assert expected[0] == {"a": [1, 2, 3], "b": [1, 2, 3], "c": [7]}
    assert expected[1][(1, 3, 7)] == (math.inf, []) and expected[1][(2, 2, 7)] == (1.0, [1.0])
    cache = tmp_path / "small.json"
    kt_peers.dataset_as_cache(csv, cache)
    zipped = tmp_path / "small.json.gz"
    zipped.write_bytes(gzip.compress(cache.read_bytes()))
    text = cache.read_text()
    assert text.endswith("}}")
    still_open = tmp_path / "open.json"
    still_open.write_text(text[:-2] + ",\n")
    for path in (cache, zipped, still_open):
        assert kt_peers.read_recorded(path) == expected
    assert kt_peers.space_name(zipped) == "small"
    t4 = tmp_path / "run_T4.json"
    t4.write_text('{"schema_version": "1.0.0", "results": []}')
    with pytest.raises(SystemExit, match="no recorded configs"):
        kt_peers.read_recorded(t4)
    t4.write_text('{"schema_version": "1.0.0"}')
    with pytest.raises(SystemExit, match="neither a Kernel Tuner cache file nor a T4 results file"):
        kt_peers.read_recorded(t4)


def test_peer_bar_on_a_gzipped_cache_of_float_string_and_bool_knobs_matches_tunekit_replay(replay_bin, tmp_path):
    """A cache whose knobs are floats, strings and booleans, gzipped: peer_bar writes its values as
    tunekit's config text does (0.25, tiled, 1), so the found-score medians it computes from a
    tunekit-replay --out run on the same file equal tunekit-replay's own."""
    peer_bar = load("peer_bar")
    tune_params = {"bx": [32, 64, 128], "w": [0.25, 0.5, 1.0, 2.5], "layout": ["row", "col", "tiled"],
                   "vec": [True, False]}
    cache = {}
    for i, (bx, w, layout, vec) in enumerate(itertools.product(*tune_params.values())):
        entry = {"bx": bx, "w": w, "layout": layout, "vec": vec}
        if bx == 128 and layout == "tiled":
            entry["time"] = "InvalidConfig"
        else:
            t = 1 + abs(bx - 64) / 32 + abs(w - 1.0) + {"row": 0.5, "col": 1.0, "tiled": 0.0}[layout] + 0.3 * (not vec)
            entry.update(time=t, times=[t * (1 + 0.01 * (i % 5 - 2)), t, t * (1 - 0.01 * (i % 5 - 2))])
        cache[",".join(map(str, entry.values()))] = entry
    path = tmp_path / "mixed.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"tune_params_keys": list(tune_params), "tune_params": tune_params,
                                               "objective": "time", "cache": cache}).encode()))
    dataset = peer_bar.read_dataset(path)
    assert dataset[0] == ["bx", "w", "layout", "vec"] and ["32", "0.25", "row", "1"] in dataset[1]
    curves, summary = replay_with_peer_bar(replay_bin, path, tmp_path, dataset,
                                           "--tuner", "tpe-local", "--seeds", "3", "--budget", "50")
    assert len(curves) == 3 and all(len(c) == 50 for c in curves)
    assert set(summary["found_score_median"]) == {"25", "50"}
    assert_found_medians_match(curves, summary)


ENERGY_PARAMS = {"bx": [32, 64, 128, 256], "tile": [1, 2, 4, 8], "shmem": [0, 1]}


def energy_results():
    """The results of a Kernel Tuner 1.4 run of tune_kernel(..., objective="GFLOPS/W") with an
    energy observer, as its runner returns them: time is lowest at bx 128, tile 4, shmem 0 (1 ms);
    the power drawn grows with the tile, so GFLOPS/W is highest at bx 128, tile 1, shmem 0; bx 256
    with tile 8 fails to compile ("__error__", no time). Returns (results, {config values: (time ms
    or None, GFLOPS/W or None)})."""
    from kernel_tuner import util

    results, truth = [], {}
    for bx, tile, shmem in itertools.product(*ENERGY_PARAMS.values()):
        r = dict(bx=bx, tile=tile, shmem=shmem, compile_time=10.0, verification_time=0, strategy_time=0,
                 framework_time=0, timestamp="2026-12-02 10:00:00.000000+00:00")
        if bx == 256 and tile == 8:
            r.update(__error__=util.CompilationFailedConfig(), benchmark_time=0)
            truth[(bx, tile, shmem)] = (None, None)
        else:
            t = 1 + abs(math.log2(bx) - 7) + 0.5 * abs(math.log2(tile) - 2) + 0.3 * shmem
            efficiency = 1000 / (t * (100 + 80 * tile + 30 * shmem))
            r.update(time=t, times=[t, t, t], benchmark_time=3 * t, **{"GFLOPS/W": efficiency})
            truth[(bx, tile, shmem)] = (t, efficiency)
        results.append(r)
    return results, truth


def energy_cache(path):
    """energy_results as the cache Kernel Tuner writes: its header as process_cache writes it and
    each entry by its own util.store_cache (a compile failure as an "__error__" with no time).
    Returns energy_results' truth."""
    from kernel_tuner import util

    results, truth = energy_results()
    header = dict(device_name="NVIDIA A100-PCIE-40GB", kernel_name="k", problem_size=[4096],
                  tune_params_keys=list(ENERGY_PARAMS), tune_params=ENERGY_PARAMS, objective="GFLOPS/W", cache={})
    path.write_text(json.dumps(header, cls=util.NpEncoder, indent="")[:-3])
    cache = {}
    for r in results:
        util.store_cache(",".join(str(r[n]) for n in ENERGY_PARAMS), dict(r), str(path), cache)
    return truth


def test_an_energy_cache_replays_by_its_objective_in_tunekit_and_the_peer_scripts(vendor, replay_bin, tmp_path):
    """tunekit (ReplayKernel.load, tunekit-replay) and the peer scripts' reader replay a cache of
    GFLOPS/W by GFLOPS/W (its best the most efficient config, not the fastest; each config's value
    1 / its GFLOPS/W), Kernel Tuner's own read_cache failing the same configs; with --objective time,
    by time. peer_bar's found-score medians of a tunekit-replay run equal tunekit-replay's own on
    both objectives, so a tunekit run and the peers' are scored alike."""
    from kernel_tuner import util

    import tunekit as tk

    kt_peers, peer_bar = load("kt_peers"), load("peer_bar")
    path = tmp_path / "energy.json"
    truth = energy_cache(path)
    kt_failed = {k for k, e in util.read_cache(str(path), open_cache=False)["cache"].items() if "__error__" in e}
    assert kt_failed == {"256,8,0", "256,8,1"}
    best_efficiency = max(e for _, e in truth.values() if e)

    kernel = tk.ReplayKernel.load(path)
    assert (kernel.objective, kernel.higher_is_better) == ("GFLOPS/W", True)
    assert kernel.failed_count == len(kt_failed)
    assert kernel.optimum_ms == pytest.approx(1 / best_efficiency)
    assert kernel.recorded_ms({"bx": 128, "tile": 1, "shmem": 0}) == pytest.approx(1 / best_efficiency)
    assert tk.ReplayKernel.load(path, objective="time").optimum_ms == 1.0
    _, recorded = kt_peers.read_recorded(path)
    for values, (t, efficiency) in truth.items():
        assert recorded[values][0] == (pytest.approx(1 / efficiency) if efficiency else math.inf)
        assert kernel.recorded_ms(dict(zip(("bx", "tile", "shmem"), values))) == recorded[values][0]
    assert kt_peers.read_recorded(path, objective="time")[1][(128, 4, 0)] == (1.0, [1.0, 1.0, 1.0])

    for objective in (None, "time"):
        extra = ["--objective", objective] if objective else []
        curves, summary = replay_with_peer_bar(replay_bin, path, tmp_path, peer_bar.read_dataset(path, objective),
                                               "--tuner", "tpe-local", "--seeds", "3", "--budget", "25", *extra)
        assert summary["objective"] == (objective or "GFLOPS/W")
        assert set(summary["found_score_median"]) == {"25"}
        assert_found_medians_match(curves, summary)

    # Tasks of one model replayed by different objectives (their weighted sum would mix units).
    csv = tmp_path / "small.csv"
    csv.write_text(SMALL)
    done = subprocess.run([str(replay_bin), "--dataset", str(path), "--dataset", str(csv), "--seeds", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "replayed by different objectives (energy: GFLOPS/W, small: time)" in done.stderr

    # A name Kernel Tuner has no direction for: both sides ask for one.
    done = subprocess.run([str(replay_bin), "--dataset", str(path), "--objective", "compile_time", "--seeds", "1"],
                          capture_output=True, text=True)
    assert done.returncode == 1 and "no direction for the objective 'compile_time'" in done.stderr
    with pytest.raises(SystemExit, match="no direction for the objective 'compile_time'"):
        kt_peers.read_recorded(path, objective="compile_time")
    assert kt_peers.read_recorded(path, "compile_time", "no")[1][(32, 1, 0)] == (10.0, [10.0])


def test_kt_peers_tunes_an_energy_cache_as_kernel_tuner_tunes_it_by_its_objective(vendor, tmp_path):
    """kt_peers' strategies on a cache of GFLOPS/W (dataset_as_cache, then tune) make the trials
    that Kernel Tuner makes on the original file with objective="GFLOPS/W": basinhopping and
    dual_annealing use the values themselves (their local minimiser's steps), so they search
    otherwise on the inverse the score is computed from (basinhopping differs on every seed here
    when the converted cache is tuned by that inverse as "time", and on two of the five when its
    GFLOPS/W is the inverse of the inverse, which rounding changes in the last bit)."""
    kt_peers = load("kt_peers")
    path = tmp_path / "energy.json"
    energy_cache(path)
    converted = tmp_path / "converted.json"
    tune_params, recorded, _, objective, higher = kt_peers.dataset_as_cache(path, converted)
    assert (objective, higher) == ("GFLOPS/W", True)
    names = list(tune_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no thread block dimensions; overflows in the annealing's acceptance
        for strategy in ("basinhopping", "dual_annealing"):
            for seed in range(5):
                trials = [[tuple(r[n] for n in names) for r in kt_peers.tune(*run, tune_params, recorded, strategy, 20,
                                                                             seed, objective, higher)]
                          for run in ((path, "k", [4096]), (converted, "energy", 0))]
                assert len(trials[0]) > 1
                assert trials[0] == trials[1], (strategy, seed)


def test_an_energy_t4_file_reads_alike_in_tunekit_and_the_peer_scripts(vendor, replay_bin, tmp_path):
    """The same run written by Kernel Tuner's own store_output_file (a T4 results file, objective
    GFLOPS/W): the peer scripts' reader and tunekit give each config the same value by GFLOPS/W and
    by time, the failed ones failed, and peer_bar's found-score medians of a tunekit-replay run
    equal tunekit-replay's own."""
    from kernel_tuner.file_utils import store_output_file

    import tunekit as tk

    kt_peers, peer_bar = load("kt_peers"), load("peer_bar")
    results, truth = energy_results()
    path = tmp_path / "energy_T4.json"
    store_output_file(str(path), results, ENERGY_PARAMS, "GFLOPS/W")
    for objective in (None, "time"):
        kernel = tk.ReplayKernel.load(path, objective=objective or "")
        tune_params, recorded = kt_peers.read_recorded(path, objective)
        assert tune_params == ENERGY_PARAMS
        assert kernel.failed_count == sum(math.isinf(t) for t, _ in recorded.values()) == 2
        for values, (t, efficiency) in truth.items():
            expected = math.inf if t is None else t if objective == "time" else 1 / efficiency
            assert recorded[values][0] == pytest.approx(expected)
            assert kernel.recorded_ms(dict(zip(ENERGY_PARAMS, values))) == pytest.approx(expected)
        extra = ["--objective", objective] if objective else []
        curves, summary = replay_with_peer_bar(replay_bin, path, tmp_path, peer_bar.read_dataset(path, objective),
                                               "--seeds", "3", "--budget", "25", *extra)
        assert set(summary["found_score_median"]) == {"25"}
        assert_found_medians_match(curves, summary)
