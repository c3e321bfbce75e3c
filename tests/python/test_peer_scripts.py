"""bench/peer_bar.py and bench/optuna_peers.py: the found score they compute, against a hand
computation on a small space and against tunekit-replay's own summary on a recorded one; and the
reader of recorded spaces the peer scripts share (bench/kt_peers.py: read_recorded) on Kernel
Tuner caches, gzipped or not."""

import gzip
import importlib.util
import itertools
import json
import math
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


def test_peer_bar_matches_tunekit_replay_summary(datasets, replay_bin, tmp_path):
    """On convolution_A4000, the found-score medians peer_bar computes from a --out file equal
    tunekit-replay's own (its summary JSON), at every budget of the run."""
    peer_bar = load("peer_bar")
    csv = datasets / "convolution_A4000.csv"
    out, summary = tmp_path / "trials.csv", tmp_path / "summary.json"
    subprocess.run([str(replay_bin), "--dataset", str(csv), "--seeds", "5", "--budget", "50", "--quiet",
                    "--out", str(out), "--summary-json", str(summary)], check=True, capture_output=True)
    curves = peer_bar.tunekit_curves(out, peer_bar.read_dataset(csv))
    assert len(curves) == 5 and all(len(c) == 50 for c in curves)
    expected = json.loads(summary.read_text())["found_score_median"]
    assert set(expected) == {"25", "50"}
    for b, value in expected.items():
        assert peer_bar.median_at(curves, int(b)) == pytest.approx(value, abs=1e-9)


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
    names, recorded, optimum = optuna_peers.read_space(csv)
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
    with pytest.raises(SystemExit, match="not a Kernel Tuner cache file"):
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
    out, summary = tmp_path / "trials.csv", tmp_path / "summary.json"
    subprocess.run([str(replay_bin), "--dataset", str(path), "--tuner", "tpe-local", "--seeds", "3", "--budget", "50",
                    "--quiet", "--out", str(out), "--summary-json", str(summary)], check=True, capture_output=True)
    curves = peer_bar.tunekit_curves(out, dataset)
    assert len(curves) == 3 and all(len(c) == 50 for c in curves)
    expected = json.loads(summary.read_text())["found_score_median"]
    assert set(expected) == {"25", "50"}
    for b, value in expected.items():
        assert peer_bar.median_at(curves, int(b)) == pytest.approx(value, abs=1e-9)
