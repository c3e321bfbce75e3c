"""bench/search_means.sh: its group means and ahead-behind counts, against the found scores
computed independently (bench/peer_bar.py's curves from tunekit-replay --out files, mapped to the
recorded times of each space)."""

import importlib.util
import os
import re
import subprocess

from conftest import ROOT

TUNERS = ["tpe-local", "random"]
SEEDS, BUDGET = 3, 25


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_search_means_against_peer_bar_curves(datasets, replay_bin, tmp_path):
    env = dict(os.environ, TUNERS=" ".join(TUNERS), SEEDS=str(SEEDS), BUDGET=str(BUDGET), SYNTHETIC="0",
               TUNEKIT_REPLAY=str(replay_bin), TUNEKIT_DATASETS=str(datasets))
    run = subprocess.run([str(ROOT / "bench" / "search_means.sh"), str(tmp_path / "out")], env=env, check=True,
                         capture_output=True, text=True)
    rows = {m[1]: [[float(x) for x in cell.split(" / ")] for cell in m[2].split(" | ")]
            for m in re.finditer(r"^\| (\d+ \w+) \| (.*) \|$", run.stdout, re.M) if m[1] != "spaces"}
    counts = re.search(r"of (\d+) spaces ahead-behind by more than 0.002: (\S+)$", run.stdout, re.M)

    # The same runs again with --out; each run's found score at B: the best recorded time measured
    # in its first B trials over the optimum (peer_bar.tunekit_curves).
    peer_bar = load("peer_bar")
    groups = {"GPU": sorted(datasets.glob("*.csv")), "CPU": sorted((ROOT / "bench" / "recorded").glob("*.csv"))}
    found = {}  # (tuner, space) -> mean over the seeds at B
    for tuner in TUNERS:
        for csv in groups["GPU"] + groups["CPU"]:
            trials = tmp_path / f"{tuner}-{csv.stem}.csv"
            subprocess.run([str(replay_bin), "--dataset", str(csv), "--tuner", tuner, "--seeds", str(SEEDS),
                            "--budget", str(BUDGET), "--quiet", "--out", str(trials)], check=True, capture_output=True)
            curves = peer_bar.tunekit_curves(trials, peer_bar.read_dataset(csv))
            assert len(curves) == SEEDS
            found[tuner, csv.stem] = sum(c[BUDGET - 1] for c in curves) / SEEDS

    assert set(rows) == {f"{len(v)} {g}" for g, v in groups.items()}
    for g, spaces in groups.items():
        for i, tuner in enumerate(TUNERS):
            expected = sum(found[tuner, s.stem] for s in spaces) / len(spaces)
            assert rows[f"{len(spaces)} {g}"][i] == [round(expected, 3)], (g, tuner)
    spaces = [s.stem for v in groups.values() for s in v]
    diff = [found[TUNERS[1], s] - found[TUNERS[0], s] for s in spaces]
    assert counts and int(counts[1]) == len(spaces)
    assert counts[2] == f"{sum(d > 0.002 for d in diff)}-{sum(d < -0.002 for d in diff)}"
    # tpe-local ahead of random search on average at 25 trials, on these 9 spaces: the means differ.
    assert sum(found["tpe-local", s] for s in spaces) > sum(found["random", s] for s in spaces)
