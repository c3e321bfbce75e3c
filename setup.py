"""`pip install` of the Python module tunekit (pyproject.toml): the extension tunekit._tunekit is
built by this checkout's CMake (the target tunekit_python, as `cmake --build build --target
tunekit_python` builds it, for the interpreter that runs pip) and packaged with python/tunekit.

The CMake build directory is build/pip/cmake (TUNEKIT_PIP_BUILD_DIR names another), kept between
installs, so that a second install compiles only what changed. CMake finds the dependencies as
for any build (scripts/install-deps.sh installs them); TUNEKIT_CMAKE_ARGS adds arguments to its
configuration (e.g. "-DTUNEKIT_NATIVE=OFF"), CMAKE_BUILD_PARALLEL_LEVEL sets its jobs.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def version():
    """The project's version, from CMakeLists.txt's project()."""
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(tunekit VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = Path(os.environ.get("TUNEKIT_PIP_BUILD_DIR", ROOT / "build" / "pip" / "cmake")).resolve()
        cmake = os.environ.get("CMAKE", "cmake")
        if shutil.which(cmake) is None:
            raise RuntimeError("tunekit: building the module needs CMake (Debian: apt-get install cmake; "
                               "scripts/install-deps.sh installs every package the build needs)")
        configure = [
            cmake, "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython3_EXECUTABLE={sys.executable}", "-DTUNEKIT_PYTHON=ON", "-DTUNEKIT_BUILD_TESTS=OFF",
            "-DTUNEKIT_BUILD_TOOLS=OFF", "-DTUNEKIT_BUILD_EXAMPLES=OFF", "-DTUNEKIT_BUILD_BENCH=OFF",
            "-DTUNEKIT_CUDA=OFF", "-DTUNEKIT_MPI=OFF",
        ] + shlex.split(os.environ.get("TUNEKIT_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)
        subprocess.run([cmake, "--build", str(build_dir), "--target", "tunekit_python"], check=True)
        built = sorted((build_dir / "python" / "tunekit").glob("_tunekit*.so"))
        if len(built) != 1:
            raise RuntimeError(f"tunekit: expected one _tunekit*.so in {build_dir / 'python' / 'tunekit'}, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


# setuptools' own build files (and the egg-info) go to build/pip too, out of the source tree.
PIP_DIR = ROOT / "build" / "pip"
PIP_DIR.mkdir(parents=True, exist_ok=True)
setup(
    version=version(),
    ext_modules=[CMakeExtension("tunekit._tunekit")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(PIP_DIR)}, "egg_info": {"egg_base": str(PIP_DIR)}},
)
