#!/usr/bin/env bash
# Configures and builds tunekit in ./build (Release). Extra arguments go to `cmake --build`.
set -euo pipefail
cd "$(dirname "$0")/.."
"$(dirname "$0")/install-deps.sh"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" "$@"
