#pragma once
/// \file
/// Lane shuffles of tunekit::cpu::vfloat that the conv2d plans pack and write with: the even or
/// odd lanes of two vectors (stride-2 reads) and the transposition of a simd_width x
/// simd_width block (the direct plan's channel-blocked copies and write-out).

#include "tunekit/kernels/cpu/simd.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace tunekit::cpu::detail {

/// A vector of simd_width 32-bit integers: the lane indices of a shuffle.
typedef std::int32_t vint32 __attribute__((vector_size(simd_width * sizeof(std::int32_t))));

/// One butterfly of a transposition: of the rows a = r[i] and b = r[i + H] (bit H of i clear),
/// the lanes j with bit H set of a take b's lanes j - H (Low), and the lanes j with bit H clear
/// of b take a's lanes j + H (High).
template <int H, bool High, std::size_t... J>
inline vfloat butterfly(vfloat a, vfloat b, std::index_sequence<J...>) noexcept {
  constexpr int W = simd_width;
#if defined(__clang__)
  if constexpr (!High)
    return __builtin_shufflevector(a, b, ((static_cast<int>(J) & H) ? W + static_cast<int>(J) - H : static_cast<int>(J))...);
  else
    return __builtin_shufflevector(a, b, ((static_cast<int>(J) & H) ? W + static_cast<int>(J) : static_cast<int>(J) + H)...);
#else
  if constexpr (!High)
    return __builtin_shuffle(a, b, vint32{((static_cast<int>(J) & H) ? W + static_cast<int>(J) - H : static_cast<int>(J))...});
  else
    return __builtin_shuffle(a, b, vint32{((static_cast<int>(J) & H) ? W + static_cast<int>(J) : static_cast<int>(J) + H)...});
#endif
}

/// Every other lane of a followed by every other lane of b, from lane First (0: the even lanes,
/// 1: the odd ones).
template <int First, std::size_t... J>
inline vfloat alternate_lanes(vfloat a, vfloat b, std::index_sequence<J...>) noexcept {
#if defined(__clang__)
  return __builtin_shufflevector(a, b, (2 * static_cast<int>(J) + First)...);
#else
  return __builtin_shuffle(a, b, vint32{(2 * static_cast<int>(J) + First)...});
#endif
}

/// Transposes the simd_width x simd_width matrix whose rows are r[0..simd_width): log2(W)
/// stages of W/2 butterflies (W log2 W two-source shuffles, 64 for 16 lanes).
template <int H = simd_width / 2>
inline void transpose(vfloat (&r)[simd_width]) noexcept {
  if constexpr (H >= 1) {
#pragma GCC unroll 16
    for (int i = 0; i < simd_width; ++i)
      if ((i & H) == 0) {
        const vfloat a = r[i], b = r[i + H];
        r[i] = butterfly<H, false>(a, b, std::make_index_sequence<simd_width>());
        r[i + H] = butterfly<H, true>(a, b, std::make_index_sequence<simd_width>());
      }
    transpose<H / 2>(r);
  }
}

}  // namespace tunekit::cpu::detail
