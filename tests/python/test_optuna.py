"""tunekit.optuna.Sampler in Optuna 3.1 studies: search, errors, pruning, storage."""

import optuna
import pytest

import tunekit.optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)

PENALTY = {"a": 0.0, "b": 5.0, "c": 10.0}


def objective(trial):
    """Lowest (0) at x = 3, y = -2, kind = a: one config of 21 * 21 * 3 = 1323."""
    x = trial.suggest_int("x", -10, 10)
    y = trial.suggest_int("y", -10, 10)
    kind = trial.suggest_categorical("kind", ["a", "b", "c"])
    return (x - 3) ** 2 + (y + 2) ** 2 + PENALTY[kind]


def trials_to_optimum(sampler, n_trials):
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective, n_trials=n_trials)
    for t in study.trials:
        if t.value == 0:
            return t.number + 1
    return None


def test_finds_the_optimum_sooner_than_random_search():
    # Fixed seeds 0..4, 80 trials each. Random search meets the one optimal config of 1323 in 80
    # trials with probability 80/1323 = 0.06 per seed, so "at least 4 of 5 seeds" has probability
    # 5 * 0.06^4 < 1e-4 for it; tunekit must do that, and need fewer trials in total.
    budget = 80
    ours = [trials_to_optimum(tunekit.optuna.Sampler("tpe-local", seed=s), budget) for s in range(5)]
    theirs = [trials_to_optimum(optuna.samplers.RandomSampler(seed=s), budget) for s in range(5)]
    assert sum(n is not None for n in ours) >= 4, ours
    assert sum(n or budget + 1 for n in ours) < sum(n or budget + 1 for n in theirs), (ours, theirs)


def test_every_sample_is_new_and_told():
    sampler = tunekit.optuna.Sampler("autotvm", seed=3)
    study = optuna.create_study(sampler=sampler, direction="maximize")
    study.optimize(lambda t: -objective(t), n_trials=30)
    keys = [(t.params["x"], t.params["y"], t.params["kind"]) for t in study.trials]
    assert len(set(keys)) == 30
    # Every finished trial but the last was told (the last is told at the next ask).
    assert len(sampler.tuner.history) == 29
    best = sampler.tuner.best.config
    assert study.best_value == -objective(optuna.trial.FixedTrial({"x": best["x"], "y": best["y"],
                                                                    "kind": ["a", "b", "c"][int(best["kind"])]}))


def test_continuous_parameters_are_refused():
    study = optuna.create_study(sampler=tunekit.optuna.Sampler())
    with pytest.raises(ValueError, match=r"parameter 'lr' is continuous .*suggest_int, suggest_categorical"):
        study.optimize(lambda t: t.suggest_float("lr", 1e-4, 1e-1, log=True), n_trials=1, catch=())
    with pytest.raises(ValueError, match=r"^Sampler: unknown tuner preset 'nope'"):
        tunekit.optuna.Sampler("nope")
    multi = optuna.create_study(sampler=tunekit.optuna.Sampler(), directions=["minimize", "minimize"])
    with pytest.raises(ValueError, match=r"single-objective studies only"):
        multi.optimize(lambda t: (t.suggest_int("x", 0, 3), 1.0), n_trials=1, catch=())


def test_pruning():
    sampler = tunekit.optuna.Sampler(seed=2)
    study = optuna.create_study(sampler=sampler, pruner=optuna.pruners.MedianPruner(n_startup_trials=3))

    def steps(trial):
        value = objective(trial)
        for step in range(5):
            trial.report(value * (5 - step), step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    study.optimize(steps, n_trials=40)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned
    failures = [t for t in sampler.tuner.history if not t.measurement.ok]
    assert failures and all(t.measurement.error.startswith("pruned at step") for t in failures)
    assert len(failures) == len([t for t in pruned if t.number < 39])
    assert study.best_value <= 5


@pytest.mark.parametrize("storage", ["memory", "sqlite"])
def test_storage_and_resume(tmp_path, storage):
    if storage == "memory":
        store = optuna.storages.InMemoryStorage()
    else:
        store = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'study.db'}")
    study = optuna.create_study(study_name="s", storage=store, sampler=tunekit.optuna.Sampler(seed=5))
    study.optimize(objective, n_trials=15)
    # A new sampler on the stored study tells its tuner the stored trials and goes on from them.
    sampler = tunekit.optuna.Sampler(seed=5)
    again = optuna.load_study(study_name="s", storage=store, sampler=sampler)
    again.optimize(objective, n_trials=10)
    assert len(again.trials) == 25
    assert len(sampler.tuner.history) == 24
    keys = [(t.params["x"], t.params["y"], t.params["kind"]) for t in again.trials]
    assert len(set(keys[15:])) == 10 and not set(keys[15:]) & set(keys[:15])


def test_enqueued_trials_and_parallel_jobs():
    sampler = tunekit.optuna.Sampler(seed=7)
    study = optuna.create_study(sampler=sampler)
    study.enqueue_trial({"x": 3, "y": -2, "kind": "b"})
    study.enqueue_trial({"x": 3, "y": -2, "kind": "b"})  # the same parameters twice: told once
    study.optimize(objective, n_trials=12)
    study.optimize(objective, n_trials=12, n_jobs=2)
    assert len(study.trials) == 24
    keys = [(t.params["x"], t.params["y"], t.params["kind"]) for t in study.trials]
    assert keys[0] == keys[1] == (3, -2, "b")
    assert len(set(keys[2:])) == 22 and (3, -2, "b") not in keys[2:]
    # Each finished trial is told at the next ask: all but the last one or two (two jobs).
    assert 21 <= len(sampler.tuner.history) <= 22


def test_a_bad_seed_fails_at_construction():
    with pytest.raises(TypeError, match=r"^Sampler: seed must be an int in \[0, 2\*\*64\), not 'a'$"):
        tunekit.optuna.Sampler(seed="a")
    with pytest.raises(ValueError, match=r"^Sampler: seed must be an int in \[0, 2\*\*64\), not -3$"):
        tunekit.optuna.Sampler(seed=-3)
