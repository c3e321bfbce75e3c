#pragma once
/// \file
/// The host's widest float vector, for the bundled CPU kernels, through GCC/Clang vector
/// extensions: 16 lanes with AVX-512, 8 with AVX, 4 otherwise (SSE2 on x86-64, NEON on aarch64).
/// The width follows the compile flags: build the kernels with -march=native (the CMake option
/// TUNEKIT_NATIVE) to get the host's widest.

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

namespace tunekit::cpu {

#if defined(__AVX512F__)
inline constexpr int simd_width = 16;
#elif defined(__AVX__)
inline constexpr int simd_width = 8;
#else
inline constexpr int simd_width = 4;
#endif

/// A vector of simd_width floats; arithmetic with a float scalar broadcasts it.
typedef float vfloat __attribute__((vector_size(simd_width * sizeof(float))));

/// Vector registers of the target: 32 with AVX-512 and on aarch64, 16 otherwise (AVX2, AVX,
/// SSE2). The register tiles of the kernels are sized by it (conv2d/shape.hpp's register rule).
#if defined(__AVX512F__) || defined(__aarch64__)
inline constexpr int vector_registers = 32;
#else
inline constexpr int vector_registers = 16;
#endif

/// Vector registers a register tile of `rows` broadcast scalars x `vectors` loaded vectors needs
/// per reduction step: its rows x vectors accumulators, the vectors it loads and one register for
/// the broadcast (the register rule of conv2d/shape.hpp; the SGEMM's micro-kernel has the same
/// shape).
constexpr int register_tile_registers(int rows, int vectors) noexcept { return rows * vectors + vectors + 1; }

/// Unaligned load and store.
inline vfloat load(const float* p) noexcept {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vfloat v) noexcept { std::memcpy(p, &v, sizeof v); }

#if !defined(__AVX512F__) && defined(__AVX__)
namespace detail {
/// Eight lanes of ones, then eight of zeros: from entry 8 - n on, the vmaskmovps mask of the
/// first n lanes.
alignas(64) inline constexpr std::int32_t first_lanes_mask[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                                   0,  0,  0,  0,  0,  0,  0,  0};
}  // namespace detail
#endif

/// The first n <= simd_width floats at p, zero in the other lanes; reads nothing past p + n. With
/// AVX-512 and with AVX a masked load (AVX: vmaskmovps, which does not fault on the lanes it
/// leaves out); otherwise element by element (a copy into a buffer loaded as a vector would stall
/// on store forwarding).
inline vfloat load_first(const float* p, std::size_t n) noexcept {
#if defined(__AVX512F__)
  vfloat v;
  const __m512 m = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1u), p);
  std::memcpy(&v, &m, sizeof v);
  return v;
#elif defined(__AVX__)
  vfloat v;
  const __m256i mask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(detail::first_lanes_mask + 8 - n));
  const __m256 m = _mm256_maskload_ps(p, mask);
  std::memcpy(&v, &m, sizeof v);
  return v;
#else
  vfloat v{};
  for (std::size_t i = 0; i < n; ++i) v[i] = p[i];
  return v;
#endif
}

/// load(p) for a vector that several multiply-adds of a register tile use (the weights of a
/// conv2d tile, a row of B in the GEMM micro-kernel): with AVX2 it is held in a register from
/// here on, so the compiler cannot fold the load into each multiply-add. g++ 12 (-march=znver3
/// and x86-64-v3) otherwise reads such a vector from memory once per multiply-add in some tiles
/// (the conv2d's tiles of 2 to 4 positions, the gemm1x1's 4 x 1, 4 x 2, 4 x 3 and 6 x 2), and
/// those loops then wait for loads: the conv2d's 4 x 3 tile ran at 42 GFLOPS on one Zen 3 core,
/// 88 with its weights in registers (docs/benchmarks.md, "CPU conv2d against oneDNN"). With
/// AVX-512 g++ already holds them in registers, and other targets keep the plain load.
inline vfloat load_to_register(const float* p) noexcept {
  vfloat v = load(p);
#if defined(__AVX__) && !defined(__AVX512F__)
  asm("" : "+x"(v));
#endif
  return v;
}

/// Stores the first n <= simd_width lanes of v at p; writes nothing past p + n. With AVX-512 a
/// masked store; otherwise element by element (AVX's masked store, vmaskmovps to memory, has not
/// been measured against the few element stores of a row's end).
inline void store_first(float* p, vfloat v, std::size_t n) noexcept {
#if defined(__AVX512F__)
  __m512 m;
  std::memcpy(&m, &v, sizeof v);
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), m);
#else
  for (std::size_t i = 0; i < n; ++i) p[i] = v[i];
#endif
}

/// Name of the instruction set the vectors compile to.
inline constexpr const char* simd_name() noexcept {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX__)
  return "avx";
#elif defined(__aarch64__)
  return "neon";
#else
  return "sse2";
#endif
}

}  // namespace tunekit::cpu
