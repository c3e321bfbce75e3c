"""Shared set-up of the Python tests (run by ctest: tests/CMakeLists.txt, python.* tests).

Environment (ctest sets it; defaults for a run by hand from the repository root):
  PYTHONPATH           must reach the built module: build/python
  TUNEKIT_DATASETS     the recorded spaces (default ../shared/datasets beside the checkout)
  TUNEKIT_VENDOR       the vendored Kernel Tuner (default ../shared/vendor); its tests skip without it
  TUNEKIT_REPLAY_BIN   tunekit-replay (default build/tools/tunekit-replay)
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("TUNEKIT_DATASETS", ROOT.parent / "shared" / "datasets"))
VENDOR = Path(os.environ.get("TUNEKIT_VENDOR", ROOT.parent / "shared" / "vendor"))
REPLAY_BIN = Path(os.environ.get("TUNEKIT_REPLAY_BIN", ROOT / "build" / "tools" / "tunekit-replay"))

# The vendored Kernel Tuner and python-constraint, when they are there.
for sub in ("kernel_tuner", "python-constraint", "meta"):
    p = VENDOR / sub
    if p.is_dir() and str(p) not in sys.path:
        sys.path.insert(0, str(p))


@pytest.fixture
def datasets():
    if not DATASETS.is_dir():
        pytest.skip(f"no recorded datasets at {DATASETS} (set TUNEKIT_DATASETS)")
    return DATASETS


@pytest.fixture
def replay_bin():
    if not REPLAY_BIN.is_file():
        pytest.skip(f"no tunekit-replay at {REPLAY_BIN} (set TUNEKIT_REPLAY_BIN)")
    return REPLAY_BIN


@pytest.fixture
def vendor():
    if not (VENDOR / "kernel_tuner" / "kernel_tuner").is_dir():
        pytest.skip(f"no vendored Kernel Tuner at {VENDOR} (shared/vendor beside the checkout; set TUNEKIT_VENDOR)")
    return VENDOR


@pytest.fixture
def build_dir():
    d = os.environ.get("TUNEKIT_BUILD_DIR")
    if not d or not (Path(d) / "CMakeCache.txt").is_file():
        pytest.skip("TUNEKIT_BUILD_DIR names no configured build directory (ctest sets it)")
    return Path(d)
