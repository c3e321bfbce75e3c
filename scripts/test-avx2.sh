#!/usr/bin/env bash
# The kernels' AVX2 path, whatever the host: builds the kernel tests (tests/kernels) for
# x86-64-v3 (AVX2, FMA; 16 vector registers) in build-avx2 and runs them. On an AVX-512 host this
# is the only run of the AVX2 code; an AVX2 host runs it in the main suite instead.
set -euo pipefail
cd "$(dirname "$0")/.."
# On an AVX2 host without AVX-512, scripts/test.sh's -march=native build already is this build's
# kernel code (the kernels choose their path by __AVX512F__ / __AVX2__ / __AVX__ only), and the
# main suite ran every kernel test on it. TUNEKIT_AVX2_BUILD=1 builds and runs it all the same.
if [[ -z ${TUNEKIT_AVX2_BUILD:-} ]] && grep -qw avx2 /proc/cpuinfo && ! grep -qw avx512f /proc/cpuinfo; then
  echo "test-avx2: this host has AVX2 and no AVX-512: scripts/test.sh's native build ran the AVX2 path; nothing more to run"
  exit 0
fi
scripts/install-deps.sh
cmake -S . -B build-avx2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUNEKIT_MARCH=x86-64-v3 \
  -DTUNEKIT_TEST_AREAS=kernels -DTUNEKIT_BUILD_EXAMPLES=OFF -DTUNEKIT_BUILD_BENCH=OFF -DTUNEKIT_PYTHON=OFF \
  -DTUNEKIT_BUILD_TOOLS=OFF -DTUNEKIT_CUDA=OFF -DTUNEKIT_INSTALL=OFF >/dev/null
cmake --build build-avx2 -j "$(nproc)" --target tunekit_tests
# Only the kernels' own cases (the suite's packaging, docs and compile-fail checks do not depend
# on the vector width and run in the main build).
ctest --test-dir build-avx2 --output-on-failure -j "$(nproc)" -E '^consumer\.|^compile_fail\.|^docs\.'
