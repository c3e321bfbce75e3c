"""tunekit's search as an Optuna sampler (Optuna 3.1, Debian's python3-optuna).

    import optuna
    import tunekit.optuna

    study = optuna.create_study(sampler=tunekit.optuna.Sampler("tpe-local", seed=1))
    study.optimize(objective, n_trials=100)

For studies over integer (suggest_int) and categorical (suggest_categorical) parameters; a
continuous parameter (suggest_float) is a ValueError naming it. Single-objective studies only.

How it works: once a trial has finished, the parameters all finished trials share (Optuna's
intersection search space) become a tunekit search space, one knob per parameter (an integer
range: an ordinal knob of its values low, low + step, ..., high; a categorical: a categorical knob
of its choices), and a tuner of the preset searches it. At the start of each trial the sampler
tells the tuner every trial it has not been told yet, then asks it for the trial's
parameters. The first trial, parameters outside that space, and trials after the tuner has
measured every config come from Optuna's RandomSampler (with the same seed).

What the tuner is told: a complete trial's value v as a positive "mean time" that orders configs
as the study does, exp(asinh(v)) when minimising and exp(-asinh(v)) when maximising (monotone, and
finite for any finite v); a pruned trial as a failed measurement ("pruned", a runtime_error: the
preset's failure model steers away from it); a failed trial as a runtime_error. The sampler keeps
no state of its own that the study does not have: a sampler given a study loaded from storage
(in-memory or RDBStorage) tells its tuner the stored trials and goes on from them.
"""

import math
import threading

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.trial import TrialState

from . import _checks, _tunekit


def _check_distribution(name, distribution):
    if isinstance(distribution, FloatDistribution):
        raise ValueError(
            f"tunekit.optuna.Sampler: parameter '{name}' is continuous ({distribution!r}); tunekit searches "
            "integer and categorical parameters only (suggest_int, suggest_categorical)")
    if not isinstance(distribution, (IntDistribution, CategoricalDistribution)):
        raise ValueError(f"tunekit.optuna.Sampler: parameter '{name}' has an unsupported distribution {distribution!r}")


def _mean_of(value, direction):
    """A positive "time" that is lower for a better value of the study."""
    z = math.asinh(value)
    mean = math.exp(-z if direction == optuna.study.StudyDirection.MAXIMIZE else z)
    return min(max(mean, 1e-300), 1e300)


class _Space:
    """An Optuna search space (name -> distribution) as a tunekit SearchSpace."""

    def __init__(self, distributions):
        self.distributions = dict(sorted(distributions.items()))
        self.key = tuple((name, repr(d)) for name, d in self.distributions.items())
        self.space = _tunekit.SearchSpace()
        for name, d in self.distributions.items():
            _check_distribution(name, d)
            if isinstance(d, IntDistribution):
                self.space.add_range(name, d.low, d.high, d.step)
            else:
                self.space.add_categorical(name, [str(i) for i in range(len(d.choices))])

    def encode(self, params):
        """The tunekit config of a trial's parameters; None when they are not in this space."""
        out = {}
        for name, d in self.distributions.items():
            if name not in params:
                return None
            v = params[name]
            if isinstance(d, IntDistribution):
                if not isinstance(v, int) or v < d.low or v > d.high or (v - d.low) % d.step:
                    return None
                out[name] = v
            else:
                try:
                    out[name] = str(int(d.to_internal_repr(v)))
                except ValueError:
                    return None
        return out

    def decode(self, values):
        """A trial's parameters of a tunekit config."""
        out = {}
        for name, d in self.distributions.items():
            v = values[name]
            out[name] = v if isinstance(d, IntDistribution) else d.to_external_repr(int(v))
        return out


class Sampler(BaseSampler):
    """A tunekit preset (tunekit.preset_names(); default tunekit.DEFAULT_PRESET,
    tpe) as an Optuna sampler.

    seed: the tuner's and the fallback RandomSampler's seed (fixed seed, same study: same trials).
    After a study, `tuner` is the tunekit Tuner of the latest search space (its history and best).
    """

    def __init__(self, preset=_tunekit.DEFAULT_PRESET, *, seed=0):
        self.preset = _checks.preset(preset, "Sampler")
        self.seed = _checks.seed(seed, "Sampler")
        self._random = RandomSampler(seed=seed)
        self._rng = _tunekit.Rng(seed)
        self._space = None
        self.tuner = None
        self._told = set()
        self._lock = threading.Lock()  # study.optimize(n_jobs=...) samples from several threads

    def reseed_rng(self):
        self._random.reseed_rng()

    def infer_relative_search_space(self, study, trial):
        if len(study.directions) != 1:
            raise ValueError("tunekit.optuna.Sampler: single-objective studies only")
        space = intersection_search_space(study)
        for name, d in space.items():
            _check_distribution(name, d)
        return {name: d for name, d in space.items() if not d.single()}

    def sample_relative(self, study, trial, search_space):
        if not search_space:
            return {}
        with self._lock:
            space = _Space(search_space)
            if self._space is None or self._space.key != space.key:
                self._space = space
                self.tuner = _tunekit.Tuner(space.space, self.preset, trials=max(1, space.space.product_size))
                self._told = set()
            self._tell_finished(study)
            # Configs asked for trials that have finished were told; those of trials that took
            # other parameters (enqueued ones) never will be: free them unless a trial is running
            # elsewhere (n_jobs, other processes) whose config must stay reserved.
            running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if all(t.number == trial.number for t in running):
                self.tuner.forget_pending()
            batch = self.tuner.ask(1, self._rng)
            if not batch:
                return {}  # every config measured or pending: the rest come from RandomSampler
            return self._space.decode(batch[0])

    def sample_independent(self, study, trial, param_name, param_distribution):
        _check_distribution(param_name, param_distribution)
        return self._random.sample_independent(study, trial, param_name, param_distribution)

    def _tell_finished(self, study):
        """Tells the tuner each finished trial it has not been told (in trial order)."""
        direction = study.direction
        measured = {self._space.space.describe(t.config) for t in self.tuner.history}
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)):
            if t.number in self._told:
                continue
            self._told.add(t.number)
            config = self._space.encode(t.params)
            if config is None:
                continue
            key = self._space.space.describe(config)
            if key in measured:  # the same parameters again (enqueued, or drawn at random)
                continue
            measured.add(key)
            if t.state == TrialState.COMPLETE:
                m = _tunekit.Measurement.from_samples([_mean_of(t.value, direction)], 0.0)
            elif t.state == TrialState.PRUNED:
                step = t.last_step
                m = _tunekit.Measurement.failure(_tunekit.Status.runtime_error,
                                                 "pruned" + ("" if step is None else f" at step {step}"))
            else:
                m = _tunekit.Measurement.failure(_tunekit.Status.runtime_error, "trial failed")
            self.tuner.tell(config, m)


def intersection_search_space(study):
    """The parameters that every finished trial (complete or pruned) has, with their distributions."""
    return optuna.samplers.intersection_search_space(study, ordered_dict=True, include_pruned=True)
