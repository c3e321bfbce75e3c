"""Checks of the options of tunekit's Python classes, so that a bad one is an error when the object
is made, not when tuning starts."""

from . import _tunekit


def preset(value, who):
    """value, a preset's name; ValueError naming the presets otherwise."""
    if not isinstance(value, str) or value not in _tunekit.preset_names():
        raise ValueError(f"{who}: unknown tuner preset {value!r} (available: {', '.join(_tunekit.preset_names())})")
    return value


def seed(value, who, allow_none=False):
    """value, a generator seed (an int in [0, 2**64); None too with allow_none); TypeError or
    ValueError naming `who` otherwise."""
    if value is None and allow_none:
        return None
    what = "an int in [0, 2**64)" + (" or None" if allow_none else "")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{who}: seed must be {what}, not {value!r}")
    if not 0 <= value < 2**64:
        raise ValueError(f"{who}: seed must be {what}, not {value!r}")
    return value


def positive_int(value, who, name):
    """value, an int >= 1; ValueError naming `who` and `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{who}: {name} must be an int >= 1, not {value!r}")
    return value
