#!/usr/bin/env bash
# Compile time of a user's translation unit: `g++ -std=c++20 -O2 -c` of the TUs in
# bench/compile_time/: the bare include of <tunekit/tunekit.hpp> (include_only), a program that
# tunes its own kernel with the default preset (own_kernel), and one TU per preset that tunes a
# ReplayKernel (preset_*). Runs niced, REPEATS times per TU, and prints the median CPU time
# (user + system: what the compiler did, less sensitive to a loaded machine than the wall time),
# the median wall time, the number of distinct headers the TU opens (-H), the machine and the load
# average before and after.
#
# With TUNEKIT_BASELINE_INCLUDE (the include/ of another checkout, e.g. an older commit's), each
# TU is also compiled against it, the two alternating run by run so that both see the same load,
# and the old CPU time and the ratio new / old are printed beside the new one.
#
# usage: bench/compile_time.sh [REPEATS] [TU...]     (CXX picks the compiler, default g++;
#        TUNEKIT_INCLUDE the include/ to measure, default this checkout's;
#        TUNEKIT_BASELINE_INCLUDE the include/ to compare with;
#        CXXFLAGS adds flags, e.g. CXXFLAGS=-march=native)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
repeats=${1:-3}
shift || true
cxx=${CXX:-g++}
eigen=$(pkg-config --cflags-only-I eigen3 2>/dev/null || echo -I/usr/include/eigen3)
include=${TUNEKIT_INCLUDE:-$root/include}
baseline=${TUNEKIT_BASELINE_INCLUDE:-}
flags=(-std=c++20 -O2 -fopenmp $eigen ${CXXFLAGS:-})
if [ $# -gt 0 ]; then tus=("$@"); else
  tus=("$root"/bench/compile_time/include_only.cpp "$root"/bench/compile_time/own_kernel.cpp
       "$root"/bench/compile_time/preset_*.cpp)
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
# "wall cpu" seconds of one compile of TU $2 against include/ $1 (bash's `time` keyword)
compile() {
  local wall user sys
  TIMEFORMAT='%R %U %S'
  read -r wall user sys < <({ time nice -n 19 "$cxx" "${flags[@]}" -I"$1" -c "$2" -o "$out/tu.o"; } 2>&1)
  echo "$wall $(echo "$user + $sys" | bc -l)"
}

echo "compiler: $($cxx --version | head -1); flags: ${flags[*]}"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
echo "include: $include${baseline:+; baseline: $baseline}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$baseline" ]; then
  printf '%-30s %9s %9s %7s %9s %9s %8s\n' "TU" "old cpu s" "cpu s" "new/old" "old wall" "wall s" "headers"
else
  printf '%-30s %9s %9s %8s\n' "TU" "cpu s" "wall s" "headers"
fi
for tu in "${tus[@]}"; do
  walls=() cpus=() old_walls=() old_cpus=()
  for ((i = 0; i < repeats; i++)); do
    if [ -n "$baseline" ]; then
      read -r w c < <(compile "$baseline" "$tu")
      old_walls+=("$w") old_cpus+=("$c")
    fi
    read -r w c < <(compile "$include" "$tu")
    walls+=("$w") cpus+=("$c")
  done
  headers=$(nice -n 19 "$cxx" "${flags[@]}" -I"$include" -H -E "$tu" 2>&1 >/dev/null |
            grep -E '^\.+ ' | sed -E 's/^\.+ //' | sort -u | wc -l)
  cpu=$(median "${cpus[@]}") wall=$(median "${walls[@]}")
  if [ -n "$baseline" ]; then
    old_cpu=$(median "${old_cpus[@]}") old_wall=$(median "${old_walls[@]}")
    printf '%-30s %9.2f %9.2f %7.2f %9.2f %9.2f %8d\n' "$(basename "$tu" .cpp)" "$old_cpu" "$cpu" \
      "$(echo "$cpu / $old_cpu" | bc -l)" "$old_wall" "$wall" "$headers"
  else
    printf '%-30s %9.2f %9.2f %8d\n' "$(basename "$tu" .cpp)" "$cpu" "$wall" "$headers"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
