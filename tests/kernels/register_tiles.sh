#!/usr/bin/env bash
# The AVX2 register tiles hold their loaded vectors in registers: in BINARY (a program that
# contains the CPU kernels), no multiply-add of a conv2d direct tile (conv2d_tile<P, V>, P > 1)
# that fits 16 vector registers (the register rule at tunekit::cpu::vector_registers:
# P V + V + 1 <= 16), nor of a GEMM micro-kernel that holds its row of B in registers
# (micro_kernel<MR, NV, U, PackedA> where micro_kernel_holds_b, gemm.hpp; the gemm1x1 tiles among
# them), reads an operand from memory: neither a vector loaded again nor a spilled accumulator. With AVX2 a broadcast cannot be part of a multiply-add, so such an operand is a weight
# (or B) vector read again for each multiply-add, which g++ 12 did in several tiles before
# load_to_register (simd.hpp), at half their speed on a Zen 3 (docs/performance.md). Skips (77)
# when BINARY's kernels are not AVX2 code (AVX-512, or a build without AVX).
#
#   tests/kernels/register_tiles.sh BINARY
set -euo pipefail
binary=${1:?usage: register_tiles.sh BINARY}
command -v objdump >/dev/null || { echo "register_tiles: objdump not found (binutils)" >&2; exit 1; }
objdump -d -C --no-show-raw-insn "$binary" | awk '
  # A function header: "0000000000012c50 <void tunekit::cpu::detail::conv2d_tile<4, 2>(...)>:".
  /^[0-9a-f]+ <.*>:$/ {
    name = ""
    if (match($0, /tunekit::cpu::detail::conv2d_tile<[0-9]+, [0-9]+>\(/)) {
      split(substr($0, RSTART + 34, RLENGTH - 36), t, ", ")
      if (t[1] > 1 && t[1] * t[2] + t[2] + 1 <= 16) name = "conv2d_tile<" t[1] ", " t[2] ">"
    } else if (match($0, /tunekit::cpu::detail::micro_kernel<[0-9]+, [0-9]+, [0-9]+, (true|false)>\(/)) {
      # micro_kernel_holds_b (gemm.hpp): unrolled at most twice, and not a tile of every register
      # unrolled.
      split(substr($0, RSTART + 35, RLENGTH - 37), t, ", ")
      r = t[1] * t[2] + t[2] + 1
      if (t[1] > 1 && r <= 16 && t[3] <= 2 && !(t[3] > 1 && t[2] > 1 && r >= 16))
        name = "micro_kernel<" t[1] ", " t[2] ", " t[3] ", " t[4] ">"
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
    if (n == 0) { print "register_tiles: no conv2d tile or micro-kernel of 16 registers found" > "/dev/stderr"; exit 1 }
    printf "register_tiles: %d tiles and micro-kernels checked, %d with multiply-adds on memory operands\n", n, bad
    exit (bad > 0 ? 1 : 0)
  }'
