#!/usr/bin/env bash
# Runs the test suite under sanitizers (CI runs it after scripts/test.sh):
#
#   1. AddressSanitizer + UndefinedBehaviorSanitizer (GCC, build-asan): the whole ctest suite.
#   2. ThreadSanitizer (clang + LLVM's libomp + Archer, build-tsan): the test areas that run
#      OpenMP-parallel code: surrogate/ (random forest, CART, boosted trees), optimizer/ (parallel
#      annealing chains, contextual annealing, PPO), kernels/ (the CPU GEMM and conv2d kernels) and
#      stats/test_mlp (the network of PPO; Eigen parallelises its products with OpenMP).
#
# Usage: scripts/sanitize.sh [address|thread|all]   (default: all)
#
# Both builds use -O1 -g1 -fno-omit-frame-pointer (RelWithDebInfo with its flags replaced: -O1 keeps
# the instrumented tests fast enough, and leaves NDEBUG undefined so assert()s run too), and build
# only tunekit_tests and the tunekit-replay tool the tests call (no examples, no benchmarks).
#
# Why clang + libomp for ThreadSanitizer: GCC's libgomp is not built with TSan, so TSan cannot see
# the synchronisation of its barriers, locks and reductions and reports races that are not there
# (e.g. on the result of an `omp parallel for reduction`). LLVM's libomp implements the OMPT tool
# interface, and LLVM's Archer tool (libarcher.so, shipped in Debian's libomp-14-dev) uses it to
# tell TSan about every OpenMP barrier, task, lock, critical and reduction; with it a probe program
# shows no report for a reduction and reports a real race on a shared counter. TSan's
# ignore_noninstrumented_modules=1 keeps TSan out of libomp's own (uninstrumented) code. Valgrind's
# Helgrind/DRD would be the fallback, but they do not understand libgomp's futexes either and run
# 50-100x slower.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
what=${1:-all}
case "$what" in address | thread | all) ;; *)
  echo "usage: $0 [address|thread|all]" >&2
  exit 2
  ;;
esac
jobs=$(nproc)
# The recorded datasets: $TUNEKIT_DATASETS, else CMake's default (../shared/datasets).
datasets=()
[[ -n ${TUNEKIT_DATASETS:-} ]] && datasets=(-DTUNEKIT_DATASETS="$TUNEKIT_DATASETS")
# -g1: line tables only, all a report's stack trace needs; it compiles ~30% faster than -g.
flags="-O1 -g1"  # TUNEKIT_SANITIZE adds -fno-omit-frame-pointer -fno-sanitize-recover=all

# The packages: tunekit's own (install-deps.sh), clang 14 with its sanitizer runtimes, LLVM's
# OpenMP runtime with Archer, and llvm-symbolizer for the reports' stack traces.
scripts/install-deps.sh clang-14 libclang-rt-14-dev libomp-14-dev llvm-14
llvm=/usr/lib/llvm-14
symbolizer=$llvm/bin/llvm-symbolizer

configure() {  # build dir, C++ compiler, sanitizers, extra cmake arguments
  local dir=$1 cxx=$2 sanitize=$3
  shift 3
  # CMake drops the cache, and with it this command's -D options, when the compiler changes.
  if [[ -f $dir/CMakeCache.txt ]]; then
    local cached
    cached=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
    [[ $(readlink -f "$cached") == $(readlink -f "$cxx") ]] || rm -rf "$dir"
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DTUNEKIT_SANITIZE="$sanitize" \
    -DTUNEKIT_BUILD_EXAMPLES=OFF -DTUNEKIT_BUILD_BENCH=OFF -DTUNEKIT_CUDA=OFF -DTUNEKIT_PYTHON=OFF "${datasets[@]}" \
    "$@" >/dev/null
}

if [[ $what == address || $what == all ]]; then
  echo "sanitize: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan)"
  # Without the MPI farm (TUNEKIT_MPI=OFF): Open MPI's own allocations at MPI_Init outlive
  # MPI_Finalize, which LeakSanitizer would report in tunekit-replay's mpirun test; the farm's
  # protocol and LocalFarm are tested under ASan all the same (tests/farm).
  configure build-asan /usr/bin/g++ address,undefined -DTUNEKIT_MPI=OFF
  cmake --build build-asan -j "$jobs" --target tunekit_tests doc_readme doc_getting_started
  # Not detect_stack_use_after_return=1: with it GCC 12's runtime makes the tests/records/test_log
  # cases crash under ctest (a read of an address equal to the pid, copying an initializer_list
  # in small_space()), though not when run by hand with an unescaped --test-case; not yet explained.
  export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1:strict_string_checks=1:abort_on_error=0:halt_on_error=1:external_symbolizer_path=$symbolizer
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:external_symbolizer_path=$symbolizer
  export LSAN_OPTIONS=suppressions=$root/scripts/sanitizers/lsan.supp
  # Left out, with the reason:
  # - consumer.*: they configure, build and run a separate consumer project against the installed
  #   package (a CMake packaging check, built without sanitizers); nothing of it is instrumented.
  # - compile_fail.*: they only run the compiler (-fsyntax-only) on files that must not compile;
  #   nothing of them is instrumented.
  # - docs.getting_started_build: like consumer.*, it builds docs/getting-started.md's program with
  #   the page's g++ line and CMake project, without sanitizers; nothing of it is instrumented.
  # - the multi-seed statistical comparisons ("... beat(s) random search ...", 8 cases, and three
  #   more: Chameleon's escape on convolution_A4000 over 15 seeds, the bandit's slot allocation,
  #   the multi-task schedulers' time to 1.05x): 120 s in Release, about 13 minutes under ASan on
  #   2 cores, which CI's 45 minutes cannot hold; tpe-gp-rf-restarts against tpe-gp-rf over 40
  #   seeds of 400 trials (12 s in Release, measured on its own); and the confirmation of each
  #   task's best after 9 multi-task runs of the default search (6 s in Release; the confirmation
  #   itself runs under ASan in tunekit-replay's multi-task test, --confirm 3); tpe-gp against
  #   tpe-local over 2 spaces x 3 tuners x many seeds (24 s under ASan), TreeParzen's restarts
  #   against none and random search over 40 seeds of a two-layout space (19 s; the mechanism,
  #   "a new phase begins once the phase's best has stalled", runs), and the model start's forest
  #   alone against random search over 100 seeds of gemm_RTX_3090 (the model start's forest
  #   turns run in "ModelStart: in its forest turns ..."). They repeat over
  #   7-40 seeds the presets and schedulers that shorter cases run under ASan once (test_tuner's exact
  #   re-execution of random, AutoTVM and PPO; the kill-and-resume test; the forest, annealing,
  #   contextual annealing, adaptive evaluator, k-means sampler and scheduler cases; TreeParzen's
  #   restart cases).
  # - "Isolated: crashing, ...": runs on its own below. Its kernel segfaults and divides by zero
  #   on purpose, in a forked child, and checks that the child died by SIGSEGV / SIGFPE; ASan's
  #   handlers would catch those signals and exit(1) instead.
  crash_test='^Isolated: crashing, hanging and wrong configs'
  statistical='beats? random search|^tpe-local beats the presets|^tpe-gp-rf beats the presets|^tpe-gp-rf-restarts: |^on convolution_A4000 Chameleon escapes|^the bandit scheduler spends most slots|^multi-task replay: the schedulers against sequential|^multi-task replay: confirming each task|^tpe-gp finds fast configs sooner than tpe-local|^RestartOnStall: restarts give a run that locked|^ModelStart<RandomForest>: '
  ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 900 -E "^consumer\.|^compile_fail\.|^docs\.getting_started_build$|$statistical|$crash_test"
  ASAN_OPTIONS=$ASAN_OPTIONS:handle_segv=0:handle_sigfpe=0 \
    ctest --test-dir build-asan --output-on-failure --timeout 900 -R "$crash_test"
fi

if [[ $what == thread || $what == all ]]; then
  echo "sanitize: ThreadSanitizer, OpenMP-parallel areas (build-tsan)"
  configure build-tsan /usr/bin/clang++-14 thread -DTUNEKIT_BUILD_TOOLS=OFF \
    -DTUNEKIT_INSTALL=OFF "-DTUNEKIT_TEST_AREAS=surrogate;optimizer;kernels;stats/test_mlp"
  cmake --build build-tsan -j "$jobs" --target tunekit_tests
  export OMP_TOOL_LIBRARIES=$llvm/lib/libarcher.so
  # Two threads per parallel region even on a one-core machine, so that the parallel paths run.
  export OMP_NUM_THREADS=2
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=$root/scripts/sanitizers/tsan.supp:external_symbolizer_path=$symbolizer"
  # Left out, with the reason:
  # - consumer.*, compile_fail.*: as above, nothing instrumented (the Release run checks the
  #   compile-fail diagnostics with GCC; their regex also takes clang 14's form).
  # - docs.*: the documentation's programs, built and run by the Release and ASan runs.
  # - the search-space tests of the CPU kernels (conv2d's ResNet-18 space, the GEMM space, where
  #   gemm1x1 and gemm_rows are offered): they enumerate and sample the spaces on one thread, with
  #   no OpenMP, and take ~5 minutes under TSan; ASan+UBSan runs them.
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 900 \
    -E '^consumer\.|^compile_fail\.|^docs\.|^conv2d: the space of a ResNet-18 layer|^the GEMM space:|^conv2d: gemm1x1 is offered|^conv2d: gemm_rows is offered'
fi
echo "sanitize: no sanitizer reports"
