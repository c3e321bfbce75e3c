"""`cmake --install` puts the Python package where Debian's python3 finds it under a prefix."""

import os
import subprocess
import sys


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
