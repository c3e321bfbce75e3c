// Prints the kernels that tests/kernels/register_tiles.sh checks, one per line, as objdump -C
// names them: every conv2d direct tile conv2d_tile<P, V> with P > 1 that fits the target's vector
// registers (the register rule at tunekit::cpu::vector_registers), and every GEMM micro-kernel
// micro_kernel<MR, NV, U, PackedA> that holds its row of B in registers (micro_kernel_holds_b),
// and every gemm_rows micro-kernel conv2d_rows_kernel<MR, NV> that does (its unroll is
// conv2d_gemm_unroll's).
// Built with the same -march as tunekit_tests, so the rule is the one its kernels were built by.
#include <tunekit/kernels/cpu/conv2d/gemm1x1.hpp>
#include <tunekit/kernels/cpu/conv2d/shape.hpp>
#include <tunekit/kernels/cpu/gemm.hpp>

#include <cstdio>

int main() {
  namespace cpu = tunekit::cpu;
  std::printf("vector_registers %d\n", cpu::vector_registers);
  for (int p : cpu::conv2d_tile_widths)
    for (int v = 1; v <= cpu::conv2d_max_oc_vectors; ++v)
      if (p > 1 && cpu::is_conv2d_tile(p, v) && cpu::conv2d_tile_registers(p, v) <= cpu::vector_registers)
        std::printf("conv2d_tile<%d, %d>\n", p, v);
  for (int mr = 1; mr <= 32; ++mr)
    for (int nv = 1; nv <= 4; ++nv)
      for (int u : {1, 2, 4, 8})
        if (cpu::register_tile_registers(mr, nv) <= cpu::vector_registers && cpu::detail::micro_kernel_holds_b(mr, nv, u))
          for (const char* packed : {"false", "true"}) std::printf("micro_kernel<%d, %d, %d, %s>\n", mr, nv, u, packed);
  for (int mr : cpu::conv2d_gemm_rows)
    for (int nv = 1; nv <= cpu::conv2d_max_oc_vectors; ++nv)
      if (cpu::is_conv2d_gemm_tile(mr, nv) && cpu::detail::micro_kernel_holds_b(mr, nv, cpu::detail::conv2d_gemm_unroll(mr, nv)))
        std::printf("conv2d_rows_kernel<%d, %d>\n", mr, nv);
}
