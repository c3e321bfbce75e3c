#!/usr/bin/env bash
# Compile time of a user's translation unit: `g++ -std=c++20 -O2 -c` of one TU per preset in
# bench/compile_time/ (each includes <tunekit/tunekit.hpp> and tunes a ReplayKernel), plus the
# bare include. Runs niced, REPEATS times per TU, and prints the median, min and max wall time,
# the median CPU time (user + system: less sensitive to a loaded machine than the wall time), the
# number of distinct headers the TU opens (-H) and the load average before and after.
#
# usage: bench/compile_time.sh [REPEATS] [TU...]     (CXX picks the compiler, default g++;
#        TUNEKIT_INCLUDE another include/ to measure, e.g. an older commit's;
#        CXXFLAGS adds flags, e.g. CXXFLAGS=-march=native)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
repeats=${1:-3}
shift || true
cxx=${CXX:-g++}
eigen=$(pkg-config --cflags-only-I eigen3 2>/dev/null || echo -I/usr/include/eigen3)
include=${TUNEKIT_INCLUDE:-$root/include}  # another checkout's headers, for before/after
flags=(-std=c++20 -O2 -fopenmp -I"$include" $eigen ${CXXFLAGS:-})
if [ $# -gt 0 ]; then tus=("$@"); else
  tus=("$root"/bench/compile_time/include_only.cpp "$root"/bench/compile_time/preset_*.cpp)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "compiler: $($cxx --version | head -1); flags: ${flags[*]}"
echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-24s %9s %9s %9s %9s %8s\n' "TU" "median s" "min s" "max s" "cpu s" "headers"
TIMEFORMAT='%R %U %S'
for tu in "${tus[@]}"; do
  walls=()
  cpus=()
  for ((i = 0; i < repeats; i++)); do
    # wall, user and system seconds of the compiler (bash's `time` keyword)
    read -r wall user sys < <({ time nice -n 19 "$cxx" "${flags[@]}" -c "$tu" -o "$out/tu.o"; } 2>&1)
    walls+=("$wall")
    cpus+=("$(echo "$user + $sys" | bc -l)")
  done
  sorted=($(printf '%s\n' "${walls[@]}" | sort -g))
  cpu_sorted=($(printf '%s\n' "${cpus[@]}" | sort -g))
  headers=$(nice -n 19 "$cxx" "${flags[@]}" -H -E "$tu" 2>&1 >/dev/null |
            grep -E '^\.+ ' | sed -E 's/^\.+ //' | sort -u | wc -l)
  printf '%-24s %9.2f %9.2f %9.2f %9.2f %8d\n' "$(basename "$tu" .cpp)" "${sorted[$((repeats / 2))]}" \
    "${sorted[0]}" "${sorted[$((repeats - 1))]}" "${cpu_sorted[$((repeats / 2))]}" "$headers"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
