"""tunekit's search as a Kernel Tuner strategy.

    import kernel_tuner
    import tunekit.kernel_tuner

    results, env = kernel_tuner.tune_kernel(
        "vector_add", source, size, args, tune_params, restrictions=restrictions,
        strategy=tunekit.kernel_tuner.Strategy("tpe-local"),
        strategy_options=dict(max_fevals=100))

Kernel Tuner (kernel_tuner/interface.py) takes as `strategy=` any object with
`tune(searchspace, runner, tuning_options)`. Strategy builds a tunekit search space with one knob
per tunable parameter that takes more than one value (integers as tunekit-replay reads a dataset's
columns: 0/1 a boolean knob, three or more powers of two a power-of-two knob, others an ordinal
knob, values ascending; True/False: a boolean knob; other numbers: an ordinal knob over their rank;
anything else: a categorical knob) and a membership constraint that admits exactly Kernel Tuner's
valid configurations (its restrictions and the device's limits, as its Searchspace built them).
The preset's tuner then asks for configs and is told what Kernel Tuner's runner measured,
through Kernel Tuner's own CostFunc, so its budget (strategy_options max_fevals and time_limit),
its cache and simulation mode work as for its own strategies. The rounds are Tuner.tune's: the
tuner is asked for plan_size configs (at most the max_fevals left), each is measured and told, and
it is asked again. Strategy's docstring has the seed rule and when a run makes tunekit-replay's
trials.

What the tuner is told: for the objective "time" (Kernel Tuner's default, in ms, lower is better)
that time in seconds (ms * 1e-3, as tunekit-replay reads a cache) as the mean time; for any other objective a positive monotone transform of its value
v, exp(asinh(v)) to minimise and exp(-asinh(v)) to maximise (finite for any finite v), so that
tunekit's "lower mean time is better" ranks configurations as the objective does. A configuration Kernel Tuner reports as
failed (CompilationFailedConfig, RuntimeFailedConfig, InvalidConfig) is a failed measurement
(build_error, runtime_error, build_error), which tunekit's presets record and model. The cost of a
measurement is its compile, verification and benchmark time.
"""

import math

from . import _checks, _tunekit

# The strategy_options Kernel Tuner passes to every strategy (strategies/common.py: get_options).
_ACCEPTED_OPTIONS = ("max_fevals", "time_limit", "x0", "searchspace_construction_options")


def _key(value):
    """A dict key that tells 1, 1.0 and True apart (they are equal in Python)."""
    return (type(value), value)


class _Parameter:
    """How one Kernel Tuner parameter maps to a tunekit knob (or to a fixed value)."""

    def __init__(self, name, values):
        values = list(values)
        if not values:
            raise ValueError(f"tunable parameter '{name}' has no values")
        self.name = name
        self.values = values
        self.position = {}
        for i, v in enumerate(values):
            self.position.setdefault(_key(v), i)
        if len(self.position) != len(values):
            raise ValueError(f"tunable parameter '{name}' lists a value twice: {values}")
        self.fixed = len(values) == 1
        self.kind = None
        if self.fixed:
            return
        if all(isinstance(v, bool) for v in values):
            self.kind = "boolean"
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            # As ReplayKernel reads a dataset's integer column: {0, 1} boolean, three or more
            # powers of two power_of_two, the rest ordinal, values ascending.
            self.sorted = sorted(values)
            if self.sorted == [0, 1]:
                self.kind = "boolean"
            elif len(values) >= 3 and all(v > 0 and v & (v - 1) == 0 for v in values):
                self.kind = "power_of_two"
            else:
                self.kind = "ordinal"
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            self.kind = "rank"
            order = sorted(range(len(values)), key=lambda i: values[i])
            self.rank = {i: r for r, i in enumerate(order)}
            self.by_rank = {r: i for i, r in self.rank.items()}
        else:
            self.kind = "categorical"
            self.labels = [repr(v) for v in values]
            self.by_label = {label: i for i, label in enumerate(self.labels)}
            if len(self.by_label) != len(values):
                raise ValueError(f"tunable parameter '{name}': two values print alike: {values}")

    def add_to(self, space):
        if self.kind == "boolean":
            space.add_boolean(self.name)
        elif self.kind == "power_of_two":
            space.add_power_of_two(self.name, self.sorted)
        elif self.kind == "ordinal":
            space.add_ordinal(self.name, self.sorted)
        elif self.kind == "rank":
            space.add_ordinal(self.name, list(range(len(self.values))))
        elif self.kind == "categorical":
            space.add_categorical(self.name, self.labels)

    def index_of(self, value):
        i = self.position.get(_key(value))
        if i is None:
            raise ValueError(f"tunable parameter '{self.name}' has no value {value!r}")
        return i

    def encode(self, value):
        """The tunekit knob value of a Kernel Tuner value."""
        i = self.index_of(value)
        if self.fixed:
            return None
        if self.kind == "boolean":
            return bool(self.values[i])
        if self.kind in ("ordinal", "power_of_two"):
            return self.values[i]
        if self.kind == "rank":
            return self.rank[i]
        return self.labels[i]

    def decode(self, knob_value):
        """The Kernel Tuner value of a tunekit knob value."""
        if self.kind == "boolean":
            return next(v for v in self.values if bool(v) == bool(knob_value))
        if self.kind in ("ordinal", "power_of_two"):
            return knob_value
        if self.kind == "rank":
            return self.values[self.by_rank[knob_value]]
        return self.values[self.by_label[knob_value]]


class SearchSpaceMap:
    """A Kernel Tuner Searchspace as a tunekit SearchSpace, and configs both ways."""

    def __init__(self, searchspace):
        self.parameters = [_Parameter(name, values) for name, values in searchspace.tune_params.items()]
        self.space = _tunekit.SearchSpace()
        for p in self.parameters:
            if not p.fixed:
                p.add_to(self.space)
        self.knobs = [p for p in self.parameters if not p.fixed]
        self.valid = [tuple(c) for c in searchspace.list]
        product = 1
        for p in self.knobs:
            product *= len(p.values)
        if self.knobs and len(self.valid) < product:
            self.space.restrict_to("Kernel Tuner's valid configurations (restrictions and device limits)",
                                   [self.encode(c) for c in self.valid])

    def encode(self, config):
        """The tunekit config (dict) of a Kernel Tuner config (a tuple in tune_params order)."""
        if len(config) != len(self.parameters):
            raise ValueError(f"config {config!r} has {len(config)} values for {len(self.parameters)} tunable parameters")
        out = {}
        for p, v in zip(self.parameters, config):
            knob = p.encode(v)
            if not p.fixed:
                out[p.name] = knob
        return out

    def decode(self, values):
        """The Kernel Tuner config (a list in tune_params order) of a tunekit config."""
        return [p.values[0] if p.fixed else p.decode(values[p.name]) for p in self.parameters]


def _single_objective(tuning_options):
    """The objective's name and whether higher is better (Kernel Tuner 1.4 keeps lists of them)."""
    objective = tuning_options.objective
    higher_is_better = tuning_options.objective_higher_is_better
    if isinstance(objective, (list, tuple)):
        if len(objective) != 1:
            raise ValueError(f"tunekit.kernel_tuner.Strategy optimises one objective, not {list(objective)!r}")
        objective = objective[0]
        if isinstance(higher_is_better, (list, tuple)):
            higher_is_better = higher_is_better[0]
    return objective, bool(higher_is_better)


def _measurement(result, objective):
    """The tunekit Measurement of a Kernel Tuner result dict; objective: (name, higher_is_better)."""
    from kernel_tuner.util import ErrorConfig, RuntimeFailedConfig

    objective, higher_is_better = objective
    cost = 0.0
    for key in ("compile_time", "verification_time", "benchmark_time"):
        t = result.get(key)
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0:
            cost += t / 1000.0
    value = result.get(objective)
    if isinstance(value, ErrorConfig) or isinstance(result.get("__error__"), ErrorConfig):
        error = value if isinstance(value, ErrorConfig) else result["__error__"]
        if isinstance(error, RuntimeFailedConfig):
            status = _tunekit.Status.runtime_error
        else:  # CompilationFailedConfig, InvalidConfig
            status = _tunekit.Status.build_error
        return _tunekit.Measurement.failure(status, f"Kernel Tuner: {type(error).__name__}", cost)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return _tunekit.Measurement.failure(_tunekit.Status.runtime_error,
                                            f"Kernel Tuner: objective '{objective}' is {value!r}", cost)
    if objective == "time" and not higher_is_better:
        if value <= 0:
            return _tunekit.Measurement.failure(_tunekit.Status.runtime_error,
                                                f"Kernel Tuner: time {value!r} ms is not positive", cost)
        mean = float(value) * 1e-3  # in seconds, as tunekit-replay reads the cache's ms
    else:
        mean = math.exp(-math.asinh(value) if higher_is_better else math.asinh(value))
        mean = min(max(mean, 1e-300), 1e300)
    return _tunekit.Measurement.from_samples([mean], cost)


class Strategy:
    """A tunekit preset (tunekit.preset_names(); default tunekit.DEFAULT_PRESET,
    tpe) as a Kernel Tuner strategy.

    seed: the tuner's generator seed, or None (the default) for the seed rule below.
    plan_size: configs asked from the tuner per round, as Tuner.tune and tunekit-replay
    --plan-size ask them (64; the tunekit searches (tpe-*) hand out one config a round before 100
    trials whatever it is, the model-based presets refit their model once a round).

    Seeds, as Kernel Tuner's own strategies and its `tune_kernel(seed=...)` have them: the first
    of Strategy(seed=s), tune_kernel(..., seed=s), or (neither given) a draw from numpy's global
    generator at the start of each tune_kernel, so that `numpy.random.seed(s)` before
    tune_kernel makes a run reproducible and unseeded runs differ. `last_seed` is the seed of the
    last run.

    Same seed, space and measurements: same configs. On a recorded space whose cache answers each
    config with one time (simulation mode), every preset measures the configs, in the same order,
    that `tunekit-replay --tuner PRESET --budget max_fevals --plan-size plan_size` measures with
    that seed on the same cache (tests/python/test_kernel_tuner.py checks each preset), unless
    x0 is given (measured first, it is a trial the replay does not make) or time_limit stops the
    run first.
    After tune_kernel, `tuner` is the tunekit Tuner of the last run (its history and best).
    """

    def __init__(self, preset=_tunekit.DEFAULT_PRESET, *, seed=None, plan_size=64):
        self.preset = _checks.preset(preset, "Strategy")
        self.seed = _checks.seed(seed, "Strategy", allow_none=True)
        self.plan_size = _checks.positive_int(plan_size, "Strategy", "plan_size")
        self.last_seed = None
        self.tuner = None

    def __repr__(self):
        return f"tunekit.kernel_tuner.Strategy({self.preset!r}, seed={self.seed}, plan_size={self.plan_size})"

    def _run_seed(self, tuning_options):
        """The seed of this run (the class's seed rule)."""
        if self.seed is not None:
            return self.seed
        seed = _checks.seed(tuning_options.get("seed"), "tune_kernel", allow_none=True)
        if seed is not None:
            return seed
        import numpy

        return int(numpy.random.randint(0, 2**32, dtype=numpy.uint64))

    def tune(self, searchspace, runner, tuning_options):
        from kernel_tuner.strategies.common import CostFunc
        from kernel_tuner.util import StopCriterionReached

        options = tuning_options.strategy_options
        for key in options:
            if key not in _ACCEPTED_OPTIONS:
                raise ValueError(f"Unrecognized option {key} in strategy_options (allowed: {list(_ACCEPTED_OPTIONS)})")
        objective = _single_objective(tuning_options)
        if searchspace.size == 0:
            raise ValueError("Kernel Tuner's search space has no valid configuration")
        seed = self.last_seed = self._run_seed(tuning_options)

        mapping = SearchSpaceMap(searchspace)
        cost_func = CostFunc(searchspace, tuning_options, runner, snap=False)
        x0 = options.get("x0")
        if x0 is not None:
            if not isinstance(x0, (list, tuple)) or len(x0) != len(mapping.parameters):
                raise ValueError(f"Invalid x0: {x0!r}, expected one value per tunable parameter ({len(mapping.parameters)})")
            if not searchspace.is_param_config_valid(tuple(x0)):
                raise ValueError(f"x0 {x0!r} is not a valid configuration (restrictions)")

        tuner = None

        def measure(config, values):
            """Runs a config through Kernel Tuner's CostFunc and tells the tuner its result, also
            when the budget is spent by it (CostFunc then raises StopCriterionReached)."""
            before = len(cost_func.results)
            try:
                cost_func(config, check_restrictions=False)
            finally:
                if tuner is not None and len(cost_func.results) > before:
                    tuner.tell(values, _measurement(cost_func.results[-1], objective))
            if len(cost_func.results) == before:
                raise StopCriterionReached("Kernel Tuner's runner returned no result")

        if not mapping.knobs:  # one configuration: nothing to search
            try:
                measure(list(mapping.valid[0]), None)
            except StopCriterionReached:
                pass
            return cost_func.results

        # The trial budget tunekit-replay --budget gives: max_fevals (Kernel Tuner caps it at the
        # space's size), or the whole space.
        budget = getattr(tuning_options.get("budget"), "max_fevals", None) or options.get("max_fevals")
        trials = min(searchspace.size, budget) if budget else searchspace.size
        self.tuner = tuner = _tunekit.Tuner(mapping.space, self.preset, trials=trials, plan_size=self.plan_size)
        # The generator as Tuner.tune uses it (its first draw seeds the measurements), so that seed
        # s searches as tunekit-replay's seed s does when both are told the same measurements.
        rng = _tunekit.Rng(seed)
        rng()
        try:
            if x0 is not None:
                measure(list(x0), mapping.encode(tuple(x0)))
            while True:  # Tuner.tune's rounds: ask plan_size (at most the trials left), measure each
                batch = tuner.ask(self.plan_size, rng)
                if not batch:
                    break
                for values in batch:
                    measure(mapping.decode(values), values)
        except StopCriterionReached as e:
            if tuning_options.verbose:
                print(e)
        return cost_func.results
