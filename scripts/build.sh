#!/usr/bin/env bash
# Configures and builds tunekit in ./build (Release). Extra arguments go to `cmake --build`.
# The Python module (python/) is built for Debian's interpreter, /usr/bin/python3 (the one that has
# the packages scripts/install-deps.sh installs), or for $TUNEKIT_PYTHON_EXECUTABLE when set.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
python=${TUNEKIT_PYTHON_EXECUTABLE:-/usr/bin/python3}
echo "build: the Python module and its tests use $python"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$python" >/dev/null
cmake --build build -j "$(nproc)" "$@"
