#!/usr/bin/env bash
# The AVX2 register tiles hold their loaded vectors in registers: in BINARY (a program that
# contains the CPU kernels), no multiply-add of the kernels that NAMES (register_tile_names.cpp,
# built with BINARY's -march) lists reads an operand from memory: neither a vector loaded again
# nor a spilled accumulator. NAMES lists, by the code's own rules, the conv2d direct tiles
# (conv2d_tile<P, V>, P > 1) that fit the vector registers (the register rule at
# tunekit::cpu::vector_registers) and the GEMM micro-kernels that hold their row of B in registers
# (micro_kernel_holds_b, gemm.hpp; the gemm1x1 tiles among them, and the gemm_rows tiles,
# conv2d_rows_kernel<MR, NV>). With AVX2 a broadcast cannot be
# part of a multiply-add, so such an operand is a weight (or B) vector read again for each
# multiply-add, which g++ 12 did in several tiles before load_to_register (simd.hpp), at half
# their speed on a Zen 3 (docs/benchmarks.md). Skips (77) when BINARY's kernels are not AVX2
# code (AVX-512, or a build without AVX).
#
#   tests/kernels/register_tiles.sh BINARY NAMES
set -euo pipefail
binary=${1:?usage: register_tiles.sh BINARY NAMES}
names=${2:?usage: register_tiles.sh BINARY NAMES}
command -v objdump >/dev/null || { echo "register_tiles: objdump not found (binutils)" >&2; exit 1; }
list=$(mktemp)
trap 'rm -f "$list"' EXIT
"$names" >"$list"
objdump -d -C --no-show-raw-insn "$binary" | awk '
  # The list first: "vector_registers 16", then one kernel name per line.
  FNR == NR { if ($1 == "vector_registers") registers = $2; else want[$0] = 1; next }
  # A function header: "0000000000012c50 <void tunekit::cpu::detail::conv2d_tile<4, 2>(...)>:".
  /^[0-9a-f]+ <.*>:$/ {
    name = ""
    if (match($0, /tunekit::cpu::detail::(conv2d_tile<[0-9]+, [0-9]+>|conv2d_rows_kernel<[0-9]+, [0-9]+>|micro_kernel<[0-9]+, [0-9]+, [0-9]+, (true|false)>)\(/)) {
      f = substr($0, RSTART + 22, RLENGTH - 23)
      if (f in want) name = f
    }
    if (name != "") { checked[name] = 1; fmas[name] = 0; folded[name] = 0 }
    next
  }
  name == "" { next }
  /vfmadd/ {
    fmas[name]++
    if ($0 ~ /%zmm/) avx512 = 1
    if ($0 ~ /%ymm/) avx2 = 1
    if ($0 ~ /\(/) folded[name]++
  }
  END {
    if (avx512 || !avx2) { print "register_tiles: no AVX2 kernels in this binary (AVX-512 or no AVX): nothing to check"; exit 77 }
    n = 0; bad = 0
    for (f in checked) {
      if (fmas[f] == 0) continue
      n++
      if (folded[f] > 0) { printf "register_tiles: %s: %d of its %d multiply-adds read a memory operand\n", f, folded[f], fmas[f]; bad++ }
    }
    if (n == 0) { printf "register_tiles: no conv2d tile or micro-kernel of %d registers found\n", registers > "/dev/stderr"; exit 1 }
    printf "register_tiles: %d tiles and micro-kernels checked (%d vector registers), %d with multiply-adds on memory operands\n", n, registers, bad
    exit (bad > 0 ? 1 : 0)
  }' "$list" -
