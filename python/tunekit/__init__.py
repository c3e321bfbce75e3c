"""tunekit from Python: search spaces, every tuner preset by name with ask/tell, logs with resume,
and replay of recorded spaces (docs/python.md).

    import tunekit
    space = tunekit.SearchSpace().add_power_of_two("block", 16, 1024).add_boolean("unroll")
    tuner = tunekit.Tuner(space, trials=50, seed=1)  # the default preset, tpe
    for config in tuner.ask(4):
        tuner.tell(config, tunekit.Measurement.from_samples([run(config)]))

The Kernel Tuner strategy is tunekit.kernel_tuner.Strategy, the Optuna sampler
tunekit.optuna.Sampler (imported on demand: they need Kernel Tuner and Optuna).
"""

from ._tunekit import (  # noqa: F401
    DEFAULT_PRESET,
    DatasetError,
    Measurement,
    RecordError,
    ReplayKernel,
    ReplayTrace,
    Rng,
    SearchSpace,
    Status,
    Trial,
    Tuner,
    measurement_rng,
    preset_names,
    presets,
    replay,
)

__all__ = [
    "DEFAULT_PRESET",
    "DatasetError",
    "Measurement",
    "RecordError",
    "ReplayKernel",
    "ReplayTrace",
    "Rng",
    "SearchSpace",
    "Status",
    "Trial",
    "Tuner",
    "measurement_rng",
    "preset_names",
    "presets",
    "replay",
]
