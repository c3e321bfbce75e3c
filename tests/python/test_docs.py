"""The ```python blocks of docs/python.md run as written: each one in a fresh interpreter, in a
working directory that stands where the repository root stands (its ../shared/datasets and
../shared/vendor lead to the datasets and the vendored Kernel Tuner), so that what they write
stays out of the checkout."""

import os
import re
import subprocess
import sys

import pytest

from conftest import DATASETS, ROOT, VENDOR

DOC = ROOT / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)\n```", DOC.read_text(), flags=re.S)


def test_the_doc_has_its_examples():
    assert len(BLOCKS) == 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_block_runs(tmp_path, index):
    code = BLOCKS[index]
    if "kernel_tuner" in code and not (VENDOR / "kernel_tuner" / "kernel_tuner").is_dir():
        pytest.skip(f"no vendored Kernel Tuner at {VENDOR}")
    if "shared/datasets" in code and not DATASETS.is_dir():
        pytest.skip(f"no recorded datasets at {DATASETS}")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "datasets").symlink_to(DATASETS)
    (tmp_path / "shared" / "vendor").symlink_to(VENDOR)
    cwd = tmp_path / "tunekit"
    cwd.mkdir()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p])
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the example prints its result"
    print(done.stdout)
