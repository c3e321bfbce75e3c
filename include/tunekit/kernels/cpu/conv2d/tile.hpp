#pragma once
/// \file
/// The inner kernel of the conv2d's direct plan (conv2d/direct.hpp): a register tile of P output
/// positions x V vectors of output channels over a list of taps, each tap read through an offset
/// table, instantiated for every shape of conv2d_tile_widths x 1..conv2d_max_oc_vectors that
/// fits the registers, and its gathering variant (conv2d_tile_gather: the input read from NCHW
/// and left in a copy as it goes) for tiles of up to conv2d_tile_position_registers positions.
/// The gemm1x1 plan (conv2d/gemm1x1.hpp) computes the partial last vector of positions of a plane
/// with the inner kernel.

#include "tunekit/kernels/cpu/conv2d/shape.hpp"
#include "tunekit/kernels/cpu/simd.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace tunekit::cpu::detail {

/// The widest tile whose input pointers (one per position) conv2d_tile keeps in integer
/// registers: x86-64 has 16, and the tap loop needs 5 more (the stack pointer, the tap's offset,
/// the offset table's and the weights' pointers, the end of the loop).
inline constexpr int conv2d_tile_position_registers = 10;

/// The accumulators of a P x V tile: loaded from acc[p * V * W + v * W] when `accumulate`, else
/// zero (conv2d_tile_start), and stored back there (conv2d_tile_finish).
template <int P, int V>
inline void conv2d_tile_start(vfloat (&a)[P][V], const float* acc, bool accumulate) noexcept {
  constexpr int W = simd_width;
  if (accumulate) {
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] = load(acc + p * V * W + v * W);
  } else {
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] = vfloat{};
  }
}

template <int P, int V>
inline void conv2d_tile_finish(const vfloat (&a)[P][V], float* acc) noexcept {
  constexpr int W = simd_width;
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) store(acc + p * V * W + v * W, a[p][v]);
}

/// The inner kernel: P output positions x V vectors of output channels, over `taps` taps. Tap t
/// reads the input values in[off[t] + p * ps] (p < P) and the weight vectors w[t * V * W + v * W]
/// (V x simd_width output channels); the tile's accumulators are acc[p * V * W + v * W], loaded
/// first when `accumulate`, else zero.
template <int P, int V>
void conv2d_tile(const float* in, const std::int32_t* off, const float* w, std::size_t taps,
                 std::ptrdiff_t ps, float* acc, bool accumulate) {
  constexpr int W = simd_width;
  constexpr int OCW = V * W;
  vfloat a[P][V];
  conv2d_tile_start(a, acc, accumulate);
  // Position p's input of every tap is at xb[p][off[t]]. With at most
  // conv2d_tile_position_registers positions, each xb[p] is a register of its own (the empty asm
  // hides from the compiler that they are in + p * ps apart; otherwise g++ 12 computes each
  // broadcast's address from the one before, an integer add per position and tap, and on Intel
  // cores those adds share ports with the multiply-adds: docs/benchmarks.md, "CPU conv2d").
  // Wider tiles, whose pointers would not fit the integer registers, keep the adds.
  constexpr bool own_registers = P > 1 && P <= conv2d_tile_position_registers;
  const float* xb[P];
  if constexpr (own_registers) {
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p) {
      xb[p] = in + p * ps;
      asm("" : "+r"(xb[p]));
    }
  }
  for (std::size_t t = 0; t < taps; ++t, w += OCW) {
    const std::ptrdiff_t o = off[t];
    vfloat wv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) wv[v] = P > 1 ? load_to_register(w + v * W) : load(w + v * W);
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p) {
      const float xp = own_registers ? xb[p][o] : in[o + p * ps];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] += xp * wv[v];
    }
  }
  conv2d_tile_finish(a, acc);
}

/// The inner kernel of a tile that gathers its input while it computes (the direct plan's nchwc
/// layout for a strided 1x1 kernel without padding, conv2d/direct.hpp): as conv2d_tile, but
/// position p's input of tap t is image[pixel[p] + plane[t]] (the NCHW input: pixel[p] the
/// position's offset in a plane, plane[t] the tap's channel plane), and each value read is also
/// stored into copy[t * P + p], from where the tile's other output-channel tiles read it with
/// conv2d_tile (offsets t * P, ps 1). The loads of tap t + 1 do not wait for the multiply-adds
/// of tap t, so the strided input's cache misses overlap computation instead of stalling a copy
/// loop before it. Instantiated for tiles of up to conv2d_tile_position_registers positions,
/// whose P input pointers stay in registers.
template <int P, int V>
void conv2d_tile_gather(const float* image, const std::int32_t* pixel, const std::int32_t* plane, float* copy,
                        const float* w, std::size_t taps, float* acc, bool accumulate) {
  constexpr int W = simd_width;
  constexpr int OCW = V * W;
  vfloat a[P][V];
  conv2d_tile_start(a, acc, accumulate);
  const float* xb[P];
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) xb[p] = image + pixel[p];
  for (std::size_t t = 0; t < taps; ++t, w += OCW, copy += P) {
    const std::ptrdiff_t o = plane[t];
    vfloat wv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) wv[v] = load_to_register(w + v * W);
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p) {
      const float xp = xb[p][o];
      copy[p] = xp;
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] += xp * wv[v];
    }
  }
  conv2d_tile_finish(a, acc);
}

using Conv2dTileFn = void (*)(const float*, const std::int32_t*, const float*, std::size_t,
                              std::ptrdiff_t, float*, bool);

template <int P, int V>
constexpr Conv2dTileFn conv2d_tile_or_null() {
  if constexpr (is_conv2d_tile(P, V))
    return &conv2d_tile<P, V>;
  else
    return nullptr;
}

template <std::size_t... I>
constexpr auto conv2d_tile_table(std::index_sequence<I...>) {
  return std::array<Conv2dTileFn, sizeof...(I)>{
      conv2d_tile_or_null<conv2d_tile_widths[I / conv2d_max_oc_vectors],
                          static_cast<int>(I % conv2d_max_oc_vectors) + 1>()...};
}

/// Every instantiated inner kernel, indexed by (position of ow_tile in conv2d_tile_widths) x
/// conv2d_max_oc_vectors + oc_vectors - 1; null where a shape is not instantiated.
inline constexpr auto conv2d_tiles = conv2d_tile_table(
    std::make_index_sequence<conv2d_tile_widths.size() * conv2d_max_oc_vectors>());

/// The index of the tile (ow_tile, oc_vectors) in conv2d_tiles and conv2d_gather_tiles, or -1.
inline std::ptrdiff_t conv2d_tile_index(int ow_tile, int oc_vectors) {
  for (std::size_t i = 0; i < conv2d_tile_widths.size(); ++i)
    if (conv2d_tile_widths[i] == ow_tile && oc_vectors >= 1 && oc_vectors <= conv2d_max_oc_vectors)
      return static_cast<std::ptrdiff_t>(i * conv2d_max_oc_vectors + static_cast<std::size_t>(oc_vectors - 1));
  return -1;
}

inline Conv2dTileFn find_conv2d_tile(int ow_tile, int oc_vectors) {
  const auto i = conv2d_tile_index(ow_tile, oc_vectors);
  return i < 0 ? nullptr : conv2d_tiles[static_cast<std::size_t>(i)];
}

using Conv2dGatherTileFn = void (*)(const float*, const std::int32_t*, const std::int32_t*, float*, const float*,
                                    std::size_t, float*, bool);

template <std::size_t... I>
constexpr auto conv2d_gather_tile_table(std::index_sequence<I...>) {
  return std::array<Conv2dGatherTileFn, sizeof...(I)>{[] {
    constexpr int P = conv2d_tile_widths[I / conv2d_max_oc_vectors], V = static_cast<int>(I % conv2d_max_oc_vectors) + 1;
    if constexpr (is_conv2d_tile(P, V) && P <= conv2d_tile_position_registers)
      return &conv2d_tile_gather<P, V>;
    else
      return Conv2dGatherTileFn{nullptr};
  }()...};
}

/// The gathering inner kernels, indexed as conv2d_tiles; null where a shape is not instantiated
/// or is wider than conv2d_tile_position_registers.
inline constexpr auto conv2d_gather_tiles = conv2d_gather_tile_table(
    std::make_index_sequence<conv2d_tile_widths.size() * conv2d_max_oc_vectors>());

inline Conv2dGatherTileFn find_conv2d_gather_tile(int ow_tile, int oc_vectors) {
  const auto i = conv2d_tile_index(ow_tile, oc_vectors);
  return i < 0 ? nullptr : conv2d_gather_tiles[static_cast<std::size_t>(i)];
}

}  // namespace tunekit::cpu::detail
