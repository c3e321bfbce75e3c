"""`cmake --install` puts the Python package where Debian's python3 finds it under a prefix;
docs/python.md's pip and CMake install commands, run as written on a copy of the checkout."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_installed_package_imports(build_dir, tmp_path):
    cmake = os.environ.get("TUNEKIT_CMAKE", "cmake")
    subprocess.run([cmake, "--install", str(build_dir), "--prefix", str(tmp_path)], check=True, capture_output=True)
    package = tmp_path / "lib" / "python3" / "dist-packages" / "tunekit"
    assert (package / "__init__.py").is_file() and (package / "kernel_tuner.py").is_file()
    assert (package / "optuna.py").is_file() and list(package.glob("_tunekit*.so"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(package.parent)
    code = ("import tunekit; print(tunekit.__file__); "
            "t = tunekit.Tuner(tunekit.SearchSpace().add_range('x', 0, 9), 'tpe-local', trials=3); print(t.ask(2))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.startswith(str(package / "__init__.py"))


def doc_commands(start):
    """The indented command lines of the docs/python.md bullet that starts with `start`."""
    text = (ROOT / "docs" / "python.md").read_text()
    bullet = text[text.index(start):]
    bullet = bullet[:bullet.index("\n- ")] if "\n- " in bullet[1:] else bullet
    bullet = bullet[:bullet.index("\n## ")] if "\n## " in bullet else bullet
    return [line.strip() for line in bullet.splitlines() if line.startswith("      ") and line.strip()]


def test_pip_install_and_cmake_install_as_the_docs_say(tmp_path, build_dir):
    """The pip lines of docs/python.md (a venv with --system-site-packages, pip install
    --no-build-isolation .) on a copy of the checkout, with pip's CMake build directory in the
    copy's build/ (TUNEKIT_PIP_BUILD_DIR), configured with the tools on but building the module
    only: then the doc's `cmake --install build` lines on that build, which did not build
    tunekit-replay, install the rest and the module alone."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git checkout to copy")
    venv_check = subprocess.run(["/usr/bin/python3", "-c", "import ensurepip, wheel, setuptools"], capture_output=True)
    if venv_check.returncode != 0:
        pytest.fail("Debian's python3-venv, python3-setuptools and python3-wheel are needed (scripts/install-deps.sh)")
    src = tmp_path / "tunekit"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    for f in files:
        if (ROOT / f).is_file() and not f.startswith(("tests/", "bench/", "docs/", "fuzz/", "examples/")):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f)
    pip = doc_commands("- With pip,")
    assert [c.split()[:3] for c in pip] == [["/usr/bin/python3", "-m", "venv"], [".venv/bin/python", "-m", "pip"],
                                          [".venv/bin/python", "-c", '"import']], pip
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env.update(TUNEKIT_PIP_BUILD_DIR=str(src / "build"), TUNEKIT_CMAKE_ARGS="-DTUNEKIT_BUILD_TOOLS=ON", PIP_NO_INDEX="1")
    done = subprocess.run(["bash", "-c", "set -e\n" + "\n".join(pip)], cwd=src, env=env, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.strip().splitlines()[-1].startswith(str(src / ".venv" / "lib"))

    cmake_lines = doc_commands("- With CMake,")
    assert len(cmake_lines) == 2 and all(c.startswith("cmake --install build ") for c in cmake_lines), cmake_lines
    cmake = os.environ.get("TUNEKIT_CMAKE", "cmake")
    prefixes, outputs = [], []
    for i, line in enumerate(cmake_lines):
        prefix = tmp_path / f"prefix{i}"
        prefixes.append(prefix)
        command = line.replace("cmake ", f"{cmake} ", 1).replace("/usr/local", str(prefix))
        done = subprocess.run(["bash", "-c", command], cwd=src, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
        package = prefix / "lib" / "python3" / "dist-packages" / "tunekit"
        assert (package / "kernel_tuner.py").is_file() and list(package.glob("_tunekit*.so"))
        run = subprocess.run([sys.executable, "-c", "import tunekit; print(tunekit.__file__)"], capture_output=True,
                             text=True, env=dict(env, PYTHONPATH=str(package.parent)), check=True)
        assert run.stdout.startswith(str(package))
    full, module_only = prefixes
    assert "tunekit: tunekit-replay was not built" in outputs[0]
    assert (full / "include" / "tunekit" / "tunekit.hpp").is_file()
    assert (full / "share" / "cmake" / "tunekit" / "tunekitConfig.cmake").is_file()
    assert not (full / "bin" / "tunekit-replay").exists()
    assert not (module_only / "include").exists() and not (module_only / "share").exists()
