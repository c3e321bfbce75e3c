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


def test_kernel_tuner_set_up_as_written(tmp_path, build_dir, vendor):
    """The Kernel Tuner section's set-up lines, copied into bash as they are (no PYTHONPATH
    before them), from a directory laid out as the repository root (its build/ the build
    directory, ../shared/vendor the vendored Kernel Tuner), make its example run."""
    text = DOC.read_text()
    section = text[text.index("## Kernel Tuner\n"):text.index("## Optuna\n")]
    lines = [line.strip() for line in section.splitlines() if line.startswith("    ")]
    export = [line for line in lines if line.startswith("export PYTHONPATH=")]
    check = [line for line in lines if line.startswith("/usr/bin/python3 -c")]
    assert len(export) == 1 and len(check) == 1, lines
    example = next(b for b in BLOCKS if "import kernel_tuner" in b)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "vendor").symlink_to(vendor)
    root = tmp_path / "tunekit"
    root.mkdir()
    (root / "build").symlink_to(build_dir)
    (root / "example.py").write_text(example)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    script = "\n".join(["set -e", export[0], check[0], f"{sys.executable} example.py"])
    done = subprocess.run(["bash", "-c", script], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "configs measured; best block_size_x" in done.stdout
