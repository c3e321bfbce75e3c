#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan) and runs each one: first on its
# regression inputs (fuzz/regressions/<target>/, every one must pass), then from its seed corpus
# (fuzz/corpus/<target>/) for a fixed number of inputs with a fixed seed: the CI smoke run.
#
#   scripts/fuzz.sh                       smoke run: FUZZ_RUNS inputs per target (default 4000)
#   FUZZ_SECONDS=600 scripts/fuzz.sh      a longer run: 600 s per target, growing a work corpus in
#                                         build-fuzz/corpus/<target>/ across runs
#   FUZZ_TARGETS="log_file" scripts/fuzz.sh   only these targets
#
# A finding (crash, leak, undefined behaviour, an exception the parser does not document, a
# broken invariant) stops the script with the input saved in build-fuzz/artifacts/<target>/.
# Replay one with build-fuzz/<target> FILE. See docs/reliability.md ("Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."

# clang 14 and its runtime libraries (libFuzzer, the sanitizers), the headers the parsers use, and
# zlib (the gzip target compares gunzip with it).
scripts/install-deps.sh --only clang-14 libclang-rt-14-dev libeigen3-dev libboost-dev nlohmann-json3-dev zlib1g-dev

cxx=${FUZZ_CXX:-clang++-14}
out=build-fuzz
runs=${FUZZ_RUNS:-4000}
seconds=${FUZZ_SECONDS:-}
all_targets=(record_line log_file dataset_csv kernel_tuner_cache config_text gzip)
read -r -a targets <<<"${FUZZ_TARGETS:-${all_targets[*]}}"
# -g1: line tables, all a report's stack trace needs (compiles faster than -g).
flags=(-std=c++20 -O1 -g1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=all -Iinclude -isystem /usr/include/eigen3)
mkdir -p "$out"

# Build (in parallel) each target whose binary is older than its source or any header.
start=$(date +%s)
pids=()
for t in "${targets[@]}"; do
  [[ -f fuzz/$t.cpp ]] || { echo "fuzz: no target fuzz/$t.cpp" >&2; exit 2; }
  bin=$out/$t
  if [[ -x $bin ]] && [[ -z $(find fuzz include -newer "$bin" \( -name '*.hpp' -o -name "$t.cpp" \) -print -quit) ]]; then
    continue
  fi
  echo "fuzz: building $t"
  libs=()
  [[ $t == gzip ]] && libs=(-lz)
  "$cxx" "${flags[@]}" "fuzz/$t.cpp" "${libs[@]}" -o "$bin.tmp" && mv "$bin.tmp" "$bin" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
echo "fuzz: built in $(( $(date +%s) - start )) s"

# Temporary files of the targets (log_file writes its input to one) stay in the build folder.
export TMPDIR=$PWD/$out/tmp
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in "${targets[@]}"; do
  bin=$out/$t
  artifacts=$out/artifacts/$t/
  mkdir -p "$artifacts"
  common=(-artifact_prefix="$artifacts" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=0)
  [[ -f fuzz/dict/$t.dict ]] && common+=(-dict="fuzz/dict/$t.dict")
  t0=$(date +%s)
  if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
    "$bin" "${common[@]}" -runs=0 "fuzz/regressions/$t" 2>"$out/$t.regressions.log" ||
      { cat "$out/$t.regressions.log" >&2; echo "fuzz: $t: a regression input fails" >&2; exit 1; }
  fi
  if [[ -n $seconds ]]; then
    work=$out/corpus/$t
    mkdir -p "$work"
    "$bin" "${common[@]}" -max_total_time="$seconds" "$work" "fuzz/corpus/$t" 2>"$out/$t.log" ||
      { tail -n 60 "$out/$t.log" >&2; echo "fuzz: $t: finding in $artifacts" >&2; exit 1; }
  else
    work=$(mktemp -d -p "$TMPDIR")
    "$bin" "${common[@]}" -seed=1 -runs="$runs" "$work" "fuzz/corpus/$t" 2>"$out/$t.log" ||
      { tail -n 60 "$out/$t.log" >&2; rm -rf "$work"; echo "fuzz: $t: finding in $artifacts" >&2; exit 1; }
    rm -rf "$work"
  fi
  echo "fuzz: $t: $(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$out/$t.log") inputs, $(( $(date +%s) - t0 )) s, no finding"
done
