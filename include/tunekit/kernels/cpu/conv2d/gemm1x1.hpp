#pragma once
/// \file
/// The gemm1x1 plan of the conv2d: for a 1x1 kernel without padding, the convolution of each
/// image is the GEMM out[oc][p] = sum_ic w[oc][ic] x in[ic][pixel(p)] over its output positions
/// p, computed with the register-blocked micro-kernel of tunekit/kernels/cpu/gemm.hpp vectorised
/// over output positions: a tile of `oc_rows` output channels x `p_vectors` vectors of
/// positions, each reduction step `p_vectors` vector loads of input, `oc_rows` broadcast weights
/// and oc_rows x p_vectors fused multiply-adds. The output positions of an NCHW plane are
/// contiguous, so tiles are stored straight into the NCHW output (no accumulator, no
/// transposition). The last tile of a plane has fewer vectors where the positions run out; a
/// partial last vector goes, when oc_rows is a multiple of simd_width, to the inner kernel of the
/// direct plan (conv2d/tile.hpp: its positions x oc_rows channels, vectorised over the channels),
/// otherwise the tile is computed aside and its valid part copied. With stride 1 the input is
/// read in place (its pixels are contiguous too); with any other stride the pixels read are
/// packed into a compact copy: with `packing` shared one [n][ic][p] copy made by all threads
/// first, with per_thread each thread copies the positions of each block it computes. With
/// AVX-512 or AVX2 that copy is made by the block's first output-channel tile as it computes
/// (detail::conv2d_gather_kernel: per run of lanes two masked loads and a two-source permutation
/// with AVX-512, two loads, two permutations and two blends with AVX2; see
/// detail::Conv2dInputVector), so its loads overlap the multiply-adds; otherwise (or where a
/// vector of positions would need more than four runs) by a copy loop just before the block. The
/// weights are packed into [oc tile][ic][oc_rows] panels when the configuration is prepared. The
/// register tile is ow_tile output channels x oc_vectors vectors of positions (the direct plan's
/// tile knobs, transposed). Blocks, chunks of input channels, loop order and parallel loop are
/// the same knobs as for the direct plan, over (output channels, positions of the image taken as
/// one row).

#include "tunekit/kernels/cpu/buffer.hpp"
#include "tunekit/kernels/cpu/conv2d/blocking.hpp"
#include "tunekit/kernels/cpu/conv2d/shape.hpp"
#include "tunekit/kernels/cpu/conv2d/shuffle.hpp"
#include "tunekit/kernels/cpu/conv2d/tile.hpp"
#include "tunekit/kernels/cpu/gemm.hpp"
#include "tunekit/kernels/cpu/simd.hpp"

#include <omp.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cpu {
namespace detail {

/// The k-loop unroll of the gemm1x1 micro-kernel of oc_rows x p_vectors: 4 with 32 vector
/// registers; with 16, 2, where g++ 12 spills accumulators of the 10 x 1, 12 x 1 and 14 x 1 tiles
/// in a loop unrolled 4 times (it hoists the broadcasts of later steps), and 1 where the kernel
/// unrolled twice could not hold its input vectors in registers (micro_kernel_holds_b: 4 x 3,
/// whose accumulators, vectors of input and broadcast take all 16 registers).
constexpr int conv2d_gemm_unroll(int oc_rows, int p_vectors) noexcept {
  if (vector_registers >= 32) return 4;
  return micro_kernel_holds_b(oc_rows, p_vectors, 2) ? 2 : 1;
}

/// Whether the gather kernel of the gemm1x1 tile (oc_rows, p_vectors) keeps its tile in registers:
/// with 16 vector registers the tile's registers (the register rule at vector_registers) and 3
/// for the reader (Conv2dInputVector::read's index, its shifted copy and a loaded half) fit, so
/// 10 x 1 and 5 x 2 gather while 12 x 1, 14 x 1, 6 x 2 and 4 x 3 (which g++ 12 spills) copy with
/// the copy loop; with 32 every tile gathers.
constexpr bool conv2d_gather_fits(int oc_rows, int p_vectors) noexcept {
  return vector_registers >= 32 || register_tile_registers(oc_rows, p_vectors) + 3 <= vector_registers;
}

/// The micro-kernels of a GEMM layout's tiles with MR output channels (Entry<MR, V>::kernel, of
/// type Fn), indexed by vectors of positions - 1 (the last tile of a row of positions may have
/// fewer vectors than the others); null where MR x vectors does not fit the registers.
template <class Fn, template <int, int> class Entry, int MR>
constexpr std::array<Fn, conv2d_max_oc_vectors> conv2d_gemm_row_kernels() {
  std::array<Fn, conv2d_max_oc_vectors> k{};
  [&]<std::size_t... V>(std::index_sequence<V...>) {
    ((k[V] = [] {
       if constexpr (is_conv2d_gemm_tile(MR, static_cast<int>(V) + 1))
         return Entry<MR, static_cast<int>(V) + 1>::kernel;
       else
         return Fn{nullptr};
     }()),
     ...);
  }(std::make_index_sequence<conv2d_max_oc_vectors>());
  return k;
}

/// The micro-kernels of a GEMM layout's tile (oc_rows, p_vectors), indexed by vectors - 1 (see
/// conv2d_gemm_row_kernels). Throws std::invalid_argument, naming `layout`, for a tile that is
/// not is_conv2d_gemm_tile.
template <class Fn, template <int, int> class Entry>
std::array<Fn, conv2d_max_oc_vectors> conv2d_gemm_tile_kernels(int oc_rows, int p_vectors, const char* layout) {
  if (!is_conv2d_gemm_tile(oc_rows, p_vectors))
    throw std::invalid_argument(std::string("Conv2dPlan: no ") + layout + " tile of " + std::to_string(oc_rows) +
                                " x " + std::to_string(p_vectors));
  static constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array{conv2d_gemm_row_kernels<Fn, Entry, conv2d_gemm_rows[I]>()...};
  }(std::make_index_sequence<conv2d_gemm_rows.size()>());
  std::size_t i = 0;
  while (conv2d_gemm_rows[i] != oc_rows) ++i;
  return table[i];
}

/// The gemm1x1 micro-kernel of the tile MR x NV.
template <int MR, int NV>
struct Conv2dGemmEntry {
  static constexpr MicroKernel kernel = &micro_kernel<MR, NV, conv2d_gemm_unroll(MR, NV), true>;
};

/// The micro-kernels of the gemm1x1 tile (oc_rows, p_vectors), indexed by vectors - 1. Throws
/// std::invalid_argument for a tile that is not is_conv2d_gemm_tile.
inline std::array<MicroKernel, conv2d_max_oc_vectors> conv2d_gemm_kernels(int oc_rows, int p_vectors) {
  return conv2d_gemm_tile_kernels<MicroKernel, Conv2dGemmEntry>(oc_rows, p_vectors, "gemm1x1");
}

#if defined(__AVX512F__)
/// How a vector of output positions of the gemm1x1 layout reads its simd_width input pixels from
/// one input plane when the stride is not 1: as up to four runs of lanes, each run two masked
/// vector loads (the 32 floats from `offset[r]` on; only the floats it reads, so nothing past the
/// input) and a two-source permutation (`index[r]`) into its lanes (`lanes[r]`). A run is the
/// lanes whose pixels lie within 32 floats of its first pixel: one per input row a vector touches
/// for a stride of 2 (a row of an output of width 28 holds 28 positions; a vector of 16 touches at
/// most 2 rows). Lanes past the last position are zero.
struct Conv2dInputVector {
  static constexpr int max_runs = 4;
  alignas(64) std::int32_t index[max_runs][16] = {};
  std::int32_t offset[max_runs] = {};
  std::uint16_t lanes[max_runs] = {}, lo[max_runs] = {}, hi[max_runs] = {};
  int runs = 0;

  /// The runs of the pixels at `pixel[0..count)` (ascending offsets in a plane, count <= 16).
  /// Returns false when they need more than max_runs runs.
  bool set(const std::int32_t* pixel, int count) {
    *this = Conv2dInputVector{};
    for (int j = 0; j < count; ++j) {
      if (runs == 0 || pixel[j] >= offset[runs - 1] + 32) {
        if (runs == max_runs) return false;
        offset[runs++] = pixel[j];
      }
      const int r = runs - 1, at = pixel[j] - offset[r];
      index[r][j] = at;
      lanes[r] = static_cast<std::uint16_t>(lanes[r] | (1u << j));
      if (at < 16)
        lo[r] = static_cast<std::uint16_t>(lo[r] | (1u << at));
      else
        hi[r] = static_cast<std::uint16_t>(hi[r] | (1u << (at - 16)));
    }
    return true;
  }

  /// The vector's pixels of the plane at `plane`.
  __m512 read(const float* plane) const {
    __m512 v = _mm512_setzero_ps();
    for (int r = 0; r < runs; ++r) {
      const float* p = plane + offset[r];
      const __m512 a = _mm512_maskz_loadu_ps(lo[r], p), b = _mm512_maskz_loadu_ps(hi[r], p + 16);
      v = _mm512_mask_mov_ps(v, lanes[r], _mm512_permutex2var_ps(a, _mm512_load_si512(index[r]), b));
    }
    return v;
  }
};

#elif defined(__AVX2__)
/// How a vector of output positions of the gemm1x1 layout reads its simd_width (8) input pixels
/// from one input plane when the stride is not 1, with AVX2: the 8-lane counterpart of the
/// AVX-512 reader. Up to four runs of lanes; a run is the lanes whose pixels lie within 16
/// floats of its first pixel: one per input row a vector touches for a stride of 2 (a vector of
/// 8 touches at most 2 rows of an output of width 7 or more). Each run reads a window of 16
/// floats as two vectors, permutes each (vpermps) and blends them into its lanes (two
/// vblendvps). The window ends at the run's last pixel (it starts up to 15 floats before its
/// first pixel, still in the plane): two plain loads, reading nothing past the pixels read. A run
/// whose last pixel lies within the plane's first 15 floats has no such window: it reads from
/// its first pixel with two masked loads (vmaskmovps) of only the floats it uses. So the reader
/// touches only the floats of the plane up to its last pixel. Lanes past the last position are
/// zero.
///
/// `index[r]` is one vector of 8 int32 per run: per lane, the float of the window it takes
/// (bits 0-3: bits 0-2 are the vpermps index in either half, bit 3 picks the half) and the sign
/// bit set where the run fills the lane (the vblendvps mask). `load_lo` and `load_hi` are the
/// vmaskmovps masks of the masked runs.
struct Conv2dInputVector {
  static constexpr int max_runs = 4;
  alignas(32) std::int32_t index[max_runs][8] = {};
  alignas(32) std::int32_t load_lo[max_runs][8] = {}, load_hi[max_runs][8] = {};
  std::int32_t offset[max_runs] = {};
  bool masked[max_runs] = {};
  int runs = 0;

  /// The runs of the pixels at `pixel[0..count)` (ascending offsets in a plane, count <= 8).
  /// Returns false when they need more than max_runs runs.
  bool set(const std::int32_t* pixel, int count) {
    *this = Conv2dInputVector{};
    constexpr std::int32_t sign = std::numeric_limits<std::int32_t>::min();
    std::int32_t first[max_runs] = {}, last[max_runs] = {};
    int run_of[8] = {};
    for (int j = 0; j < count; ++j) {
      if (runs == 0 || pixel[j] >= first[runs - 1] + 16) {
        if (runs == max_runs) return false;
        first[runs++] = pixel[j];
      }
      last[runs - 1] = pixel[j];
      run_of[j] = runs - 1;
    }
    for (int r = 0; r < runs; ++r) {
      masked[r] = last[r] < 15;
      offset[r] = masked[r] ? first[r] : last[r] - 15;
    }
    for (int j = 0; j < count; ++j) {
      const int r = run_of[j], at = pixel[j] - offset[r];
      index[r][j] = sign | at;
      if (masked[r]) (at < 8 ? load_lo[r][at] : load_hi[r][at - 8]) = -1;
    }
    return true;
  }

  /// The vector's pixels of the plane at `plane`.
  __m256 read(const float* plane) const {
    __m256 v = _mm256_setzero_ps();
    for (int r = 0; r < runs; ++r) {
      const float* p = plane + offset[r];
      const __m256i idx = _mm256_load_si256(reinterpret_cast<const __m256i*>(index[r]));
      __m256 a, b;
      if (masked[r]) {
        a = _mm256_maskload_ps(p, _mm256_load_si256(reinterpret_cast<const __m256i*>(load_lo[r])));
        b = _mm256_maskload_ps(p + 8, _mm256_load_si256(reinterpret_cast<const __m256i*>(load_hi[r])));
      } else {
        a = _mm256_loadu_ps(p);
        b = _mm256_loadu_ps(p + 8);
      }
      const __m256 from = _mm256_blendv_ps(_mm256_permutevar8x32_ps(a, idx), _mm256_permutevar8x32_ps(b, idx),
                                           _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
      v = _mm256_blendv_ps(v, from, _mm256_castsi256_ps(idx));
    }
    return v;
  }
};
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
/// Stores a vector that Conv2dInputVector::read returned.
#if defined(__AVX512F__)
inline void conv2d_store_read(float* p, __m512 v) noexcept { _mm512_storeu_ps(p, v); }
#else
inline void conv2d_store_read(float* p, __m256 v) noexcept { _mm256_storeu_ps(p, v); }
#endif

/// The gemm1x1 micro-kernel of the first output-channel tile of a block when the input is
/// strided: it reads its NV vectors of positions straight from the NCHW input (`in[v]`, from
/// `src`, `src_rs` floats from one input channel to the next), stores each into the block's
/// compact copy (`copy`, rows `copy_rs` apart) for the block's other tiles, and computes the
/// MR x NV tile from them as micro_kernel<MR, NV, 1, true> does from a packed panel. The loads
/// of step k + 1 do not wait for the multiply-adds of step k, so the input's cache misses overlap
/// computation instead of stalling a separate copy loop.
template <int MR, int NV>
void conv2d_gather_kernel(std::size_t kc, const float* a, const float* src, std::size_t src_rs,
                          const Conv2dInputVector* in, float* copy, std::size_t copy_rs, float* c,
                          std::size_t ldc, bool accumulate) {
  constexpr int W = simd_width;
  vfloat acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = vfloat{};
  for (std::size_t k = 0; k < kc; ++k) {
    vfloat bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const auto g = in[v].read(src + k * src_rs);
      conv2d_store_read(copy + k * copy_rs + v * W, g);
      std::memcpy(&bv[v], &g, sizeof g);
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const float ai = a[k * MR + static_cast<std::size_t>(i)];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] += ai * bv[v];
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float* p = c + static_cast<std::size_t>(i) * ldc + static_cast<std::size_t>(v * W);
      store(p, accumulate ? load(p) + acc[i][v] : acc[i][v]);
    }
}

using Conv2dGatherKernel = void (*)(std::size_t, const float*, const float*, std::size_t, const Conv2dInputVector*,
                                    float*, std::size_t, float*, std::size_t, bool);

/// The gather kernels of the gemm1x1 tile (oc_rows, p_vectors), indexed by vectors - 1, like
/// conv2d_gemm_kernels.
inline std::array<Conv2dGatherKernel, conv2d_max_oc_vectors> conv2d_gather_kernels(int oc_rows) {
  static constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array{[]<std::size_t... V>(std::index_sequence<V...>) {
      constexpr int MR = conv2d_gemm_rows[I];
      return std::array<Conv2dGatherKernel, conv2d_max_oc_vectors>{[] {
        if constexpr (is_conv2d_gemm_tile(MR, static_cast<int>(V) + 1) && conv2d_gather_fits(MR, static_cast<int>(V) + 1))
          return &conv2d_gather_kernel<MR, static_cast<int>(V) + 1>;
        else
          return Conv2dGatherKernel{nullptr};
      }()...};
    }(std::make_index_sequence<conv2d_max_oc_vectors>())...};
  }(std::make_index_sequence<conv2d_gemm_rows.size()>());
  std::size_t i = 0;
  while (conv2d_gemm_rows[i] != oc_rows) ++i;
  return table[i];
}
#endif

}  // namespace detail

/// The gemm1x1 convolution (a 1x1 kernel without padding) of a configuration made ready to run on
/// one shape: weights packed, the compact copy and per-thread buffers allocated. Calling it
/// computes the convolution of an NCHW input into an NCHW output; it allocates nothing.
class Conv2dGemm1x1Plan : public detail::Conv2dPlanBase {
 public:
  /// Packs `weights` (OIHW) for the configuration. Throws std::invalid_argument for bad
  /// parameters (another layout, a kernel other than 1x1 without padding) or a shape whose
  /// offsets do not fit 32 bits, std::bad_alloc when out of memory.
  Conv2dGemm1x1Plan(const Conv2dShape& shape, const Conv2dParams& params, const float* weights, int threads)
      : Conv2dPlanBase(shape, params, threads) {
    if (p_.layout != Conv2dLayout::gemm1x1)
      throw std::invalid_argument("Conv2dGemm1x1Plan: the direct layouts have a plan of their own (Conv2dDirectPlan)");
    // The GEMM: out[n][oc][p] = sum_ic w[oc][ic] x[n][ic][pixel(p)] over the P output
    // positions p of an image, pixel(p) = (p / OW) stride_h W + (p % OW) stride_w. Weights are
    // packed into [oc tile][ic][oc_rows] panels (zero past the last channel); the input is read in
    // place (stride 1) or from a compact copy of the pixels read (any other stride): with packing
    // shared one [n][ic][p] copy made by all threads together, rows padded to ppad_ (a multiple of
    // simd_width) with zeros; with packing per_thread each thread copies the positions of the block
    // it computes next, just before (no barrier, no position copied twice by a thread).
    if (s_.kernel_h != 1 || s_.kernel_w != 1 || s_.pad_h != 0 || s_.pad_w != 0)
      throw std::invalid_argument("Conv2dPlan: the gemm1x1 layout needs a 1x1 kernel without padding");
    if (p_.in_cblock != 1) throw std::invalid_argument("Conv2dPlan: the gemm1x1 layout needs in_cblock 1");
    gemm_kernels_ = detail::conv2d_gemm_kernels(p_.oc_rows, p_.p_vectors);
    oh_ = s_.out_height();
    ow_ = s_.out_width();
    positions_ = oh_ * ow_;
    ppad_ = (positions_ + simd_width - 1) / simd_width * simd_width;
    mr_ = static_cast<std::size_t>(p_.oc_rows);
    nr_ = static_cast<std::size_t>(p_.p_vectors * simd_width);
    blocks_ = detail::Conv2dBlocks(s_, p_, mr_, positions_, nr_);
    compact_ = s_.stride_h != 1 || s_.stride_w != 1;
    per_block_ = compact_ && p_.packing == Conv2dPacking::per_thread;
    block_width_ = blocks_.ow_tiles * nr_;
    const std::size_t IC = s_.in_channels;
    if (compact_ && !per_block_) {
      packed_size_ = (s_.batch * IC * ppad_ + 15) / 16 * 16;
      packed_input_ = AlignedBuffer(packed_size_);
      std::fill(packed_input_.data(), packed_input_.data() + packed_input_.size(), 0.0f);
    }
    packed_weights_ = AlignedBuffer(blocks_.oc_tiles_total * IC * mr_);
    for (std::size_t ot = 0; ot < blocks_.oc_tiles_total; ++ot)
      for (std::size_t c = 0; c < IC; ++c)
        for (std::size_t i = 0; i < mr_; ++i) {
          const std::size_t oc = ot * mr_ + i;
          packed_weights_[(ot * IC + c) * mr_ + i] = oc < s_.out_channels ? weights[oc * IC + c] : 0.0f;
        }
    // The partial last vector of positions of a plane, when oc_rows is whole vectors: the inner
    // kernel of the direct layouts over its positions x oc_rows / simd_width vectors of channels
    // (the packed weights are its [tap][channels] panels), rather than a whole vector of positions.
    const std::size_t rest = positions_ % simd_width;
    if (rest != 0 && mr_ % simd_width == 0) {
      tail_ = detail::find_conv2d_tile(static_cast<int>(rest), static_cast<int>(mr_ / simd_width));
      const std::size_t row_stride = per_block_ ? block_width_ : compact_ ? ppad_ : s_.height * s_.width;
      detail::conv2d_check_offset(IC * row_stride);
      offset_.resize(IC);
      for (std::size_t c = 0; c < IC; ++c) offset_[c] = static_cast<std::int32_t>(c * row_stride);
    }
#if defined(__AVX512F__) || defined(__AVX2__)
    // Copies per block: each block's first output-channel tile reads its vectors of positions
    // straight from the input and leaves them in the copy (detail::conv2d_gather_kernel), each
    // vector as input_vectors_ says (pixel offsets from the image's plane of input channel 0).
    if (per_block_ && detail::conv2d_gather_fits(p_.oc_rows, p_.p_vectors)) {
      gather_ = true;
      input_vectors_.resize(ppad_ / simd_width);
      for (std::size_t q = 0; q < input_vectors_.size(); ++q) {
        std::int32_t pixel[simd_width];
        const std::size_t p0 = q * simd_width, count = std::min<std::size_t>(simd_width, positions_ - p0);
        for (std::size_t j = 0; j < count; ++j)
          pixel[j] = detail::conv2d_pixel_of(s_, p0 + j);
        gather_ = gather_ && input_vectors_[q].set(pixel, static_cast<int>(count));
      }
      if (gather_) gather_kernels_ = detail::conv2d_gather_kernels(p_.oc_rows);
    }
#endif
    // Per thread: the last tile of positions copied with zero padding (read in place, it would
    // run past the input when positions are no multiple of simd_width), an edge tile, the
    // accumulators of the partial vector, and the compact copy of a block's positions.
    block_copy_at_ = (IC * nr_ + mr_ * nr_ + mr_ * simd_width + 15) / 16 * 16;
    per_thread_ = block_copy_at_ + (per_block_ ? IC * block_width_ : 0);
    scratch_ = AlignedBuffer(per_thread_ * static_cast<std::size_t>(threads_));
    std::fill(scratch_.data(), scratch_.data() + scratch_.size(), 0.0f);
  }

  /// Whether each block's copy of strided input is gathered by its first output-channel tile
  /// (detail::conv2d_gather_kernel: AVX-512 or AVX2, packing per_thread, a stride other than 1,
  /// a tile that detail::conv2d_gather_fits, every vector of positions within
  /// Conv2dInputVector::max_runs runs) rather than by the copy loop.
  bool gathers() const noexcept { return gather_; }

  /// output = conv2d(input, weights): NCHW fp32 in and out, sized as the shape says.
  void operator()(const float* input, float* output) {
    omp_set_schedule(p_.schedule, 0);
#pragma omp parallel num_threads(threads_)
    {
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      const float* in = input;
      std::size_t row_stride = s_.height * s_.width;  // between the input rows (channels) of the GEMM
      if (compact_ && !per_block_) {
        const auto rows = static_cast<std::ptrdiff_t>(s_.batch * s_.in_channels * oh_);
#pragma omp for schedule(static)
        for (std::ptrdiff_t u = 0; u < rows; ++u)
          pack_gemm_row(input, packed_input_.data(), static_cast<std::size_t>(u));
        in = packed_input_.data();  // complete after the barrier that ends the loop
        row_stride = ppad_;
      }
      float* scratch = scratch_.data() + per_thread_ * thread;
      float* block_copy = scratch + block_copy_at_;
      std::size_t copied = SIZE_MAX;  // the block of positions in block_copy: n * blocks_.ow_blocks + pb
      const auto N = s_.batch;
      auto run_block = [&](std::size_t n, std::size_t cb, std::size_t pb) {
        if (!per_block_) {
          gemm_block(in + n * s_.in_channels * row_stride, row_stride, 0, output, scratch, n, cb, pb);
          return;
        }
        const float* fill_from = nullptr;  // the image the block's first tile gathers its copy from
        if (copied != n * blocks_.ow_blocks + pb) {
          if (!gather_)
            pack_gemm_block(input, n, pb, block_copy);
          else
            fill_from = input + n * s_.in_channels * s_.height * s_.width;
          copied = n * blocks_.ow_blocks + pb;
        }
        gemm_block(block_copy, block_width_, pb * block_width_, output, scratch, n, cb, pb, fill_from);
      };
      detail::conv2d_for_each_block(p_.parallel, N, blocks_.oc_blocks, blocks_.ow_blocks, 1,
                                    [&](std::size_t n, std::size_t cb, std::size_t pb, std::size_t) {
                                      run_block(n, cb, pb);
                                    });
    }
  }

 private:
  // d[x - x0] = row[x stride_w] for x in [x0, x1): output columns x0..x1 of one input row.
  void pack_gemm_columns(const float* row, std::size_t x0, std::size_t x1, float* d) const {
    const std::size_t W = s_.width, sw = s_.stride_w;
    std::size_t x = x0;
    // Stride 2: the even lanes of two vectors; partial loads and a partial store for what is left
    // of the row. (On C5, 1x1/2 56x56, with the whole compact copy shared by the threads, the
    // masked partial store measured slower than element stores, 93 against 115 GFLOPS, while a
    // copy per thread ran faster with it, 150 against 139.)
    if (sw == 2) {
      constexpr auto v = static_cast<std::size_t>(simd_width);
      for (; x < x1; x += v) {
        const std::size_t left = W - 2 * x;  // input columns left in the row
        const vfloat lo = left >= v ? load(row + 2 * x) : load_first(row + 2 * x, left);
        const vfloat hi = left >= 2 * v  ? load(row + 2 * x + v)
                          : left > v     ? load_first(row + 2 * x + v, left - v)
                                         : vfloat{};
        const vfloat e = detail::alternate_lanes<0>(lo, hi, std::make_index_sequence<simd_width>());
        if (x + v <= x1)
          store(d + (x - x0), e);
        else
          store_first(d + (x - x0), e, x1 - x);
      }
    }
    for (; x < x1; ++x) d[x - x0] = row[x * sw];
  }

  // One row of the shared compact copy: output row oh of channel c of image n
  // (u = (n OH + oh) IC + c: threads that share the rows in order each pack the output rows they
  // compute when the positions are shared the same way, parallel oh, instead of half the
  // channels of every row, which the other thread then reads from its cache).
  void pack_gemm_row(const float* input, float* packed, std::size_t u) const {
    const std::size_t IC = s_.in_channels, c = u % IC, oh = u / IC % oh_, plane = u / (IC * oh_) * IC + c;
    pack_gemm_columns(input + (plane * s_.height + oh * s_.stride_h) * s_.width, 0, ow_,
                      packed + plane * ppad_ + oh * ow_);
  }

  // The compact copy of the positions of block pb of image n, [channel][position - first],
  // rows block_width_ apart (packing per_thread: each thread copies what it computes).
  // The rows read are short (a block's positions of one channel) and a plane apart from one
  // channel to the next, too little of a stream for the hardware prefetchers: the lines of
  // channel c + prefetch_channels are requested while channel c is copied.
  void pack_gemm_block(const float* input, std::size_t n, std::size_t pb, float* d) const {
    constexpr std::size_t prefetch_channels = 2, line = 64 / sizeof(float);
    const std::size_t IC = s_.in_channels, H = s_.height, W = s_.width, sw = s_.stride_w;
    const std::size_t pa = pb * block_width_, pe = std::min(positions_, pa + block_width_);
    auto columns = [&](std::size_t oh) {
      return std::pair{std::max(pa, oh * ow_) - oh * ow_, std::min(pe, (oh + 1) * ow_) - oh * ow_};
    };
    for (std::size_t c = 0; c < IC; ++c) {
      const float* plane = input + (n * IC + c) * H * W;
      if (c + prefetch_channels < IC) {
        const float* ahead = plane + prefetch_channels * H * W;
        for (std::size_t oh = pa / ow_; oh * ow_ < pe; ++oh) {
          const auto [x0, x1] = columns(oh);
          const float* row = ahead + oh * s_.stride_h * W;
          for (std::size_t x = x0 * sw; x < (x1 - 1) * sw + 1; x += line) __builtin_prefetch(row + x, 0, 3);
          __builtin_prefetch(row + (x1 - 1) * sw, 0, 3);
        }
      }
      for (std::size_t oh = pa / ow_; oh * ow_ < pe; ++oh) {
        const auto [x0, x1] = columns(oh);
        pack_gemm_columns(plane + oh * s_.stride_h * W, x0, x1, d + c * block_width_ + oh * ow_ + x0 - pa);
      }
    }
  }

  // One block of the GEMM: output-channel block cb and position block pb of image n, over all
  // input channels in chunks of ic_block, straight into the NCHW output. `image` holds the
  // image's input rows (channels) `row_stride` apart, from position `first` on. With `fill_from`
  // (the NCHW input of image n; gather_ only), `image` is the block's copy, still to be made: the
  // block's first output-channel tile gathers it from there while it computes.
  void gemm_block(const float* image, std::size_t row_stride, std::size_t first, float* output, float* scratch,
                  std::size_t n, std::size_t cb, std::size_t pb, const float* fill_from = nullptr) const {
    const std::size_t IC = s_.in_channels, OC = s_.out_channels, P = positions_;
    const std::size_t ot0 = cb * blocks_.oc_tiles, ots = std::min(blocks_.oc_tiles, blocks_.oc_tiles_total - ot0);
    const std::size_t pt0 = pb * blocks_.ow_tiles, pts = std::min(blocks_.ow_tiles, blocks_.ow_tiles_total - pt0);
    const std::size_t chunks = (IC + blocks_.ic_block - 1) / blocks_.ic_block;
    float* edge = scratch;             // IC x nr: the last tile of positions, zero-padded
    float* tile = scratch + IC * nr_;  // mr x nr
    float* rest = tile + mr_ * nr_;    // (P % simd_width) x mr
    // Read in place, a last tile with a partial vector would read past its rows: copy it (unless
    // the partial vector goes to the tail kernel, which reads only its positions).
    const std::size_t last_p0 = (blocks_.ow_tiles_total - 1) * nr_;
    const bool edge_copy = !compact_ && !tail_ && P % simd_width != 0 && pt0 + pts == blocks_.ow_tiles_total;
    if (edge_copy) {
      const std::size_t cols = P - last_p0;
      for (std::size_t c = 0; c < IC; ++c) {
        const float* src = image + c * row_stride + last_p0;
        float* d = edge + c * nr_;
        std::copy(src, src + cols, d);
        std::fill(d + cols, d + nr_, 0.0f);
      }
    }
    auto compute = [&](std::size_t j, std::size_t ot, std::size_t pt) {
      const std::size_t oc0 = ot * mr_, rows = std::min(mr_, OC - oc0);
      const std::size_t p0 = pt * nr_;
      std::size_t cols = std::min(nr_, P - p0);
      const std::size_t c0 = j * blocks_.ic_block, depth = std::min(blocks_.ic_block, IC - c0);
      const float* a = packed_weights_.data() + (ot * IC + c0) * mr_;
      const float* b = image + c0 * row_stride + (p0 - first);
      const bool accumulate = j > 0;
      // With fill_from, the first tile writes the copy that b reads.
      [[maybe_unused]] const bool fill = fill_from != nullptr && ot == ot0;
      [[maybe_unused]] float* b_copy = fill ? scratch + block_copy_at_ + c0 * row_stride + (p0 - first) : nullptr;
      if (tail_ && cols % simd_width != 0) {  // the partial vector: positions x channel vectors
        const std::size_t whole = cols / simd_width * simd_width, r = cols - whole;
#if defined(__AVX512F__) || defined(__AVX2__)
        if (fill) gather_copy(fill_from, c0, depth, p0 + whole, b_copy + whole, row_stride);
#endif
        tail_(b + whole, offset_.data(), a, depth, 1, rest, false);
        float* c = output + (n * OC + oc0) * P + p0 + whole;
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t q = 0; q < r; ++q)
            c[i * P + q] = accumulate ? c[i * P + q] + rest[q * mr_ + i] : rest[q * mr_ + i];
        if (whole == 0) return;
        cols = whole;
      }
      const std::size_t vectors = (cols + simd_width - 1) / simd_width;
      std::size_t b_rs = row_stride;
      if (edge_copy && p0 == last_p0) {
        b = edge + c0 * nr_;
        b_rs = nr_;
      }
      float* c = output + (n * OC + oc0) * P + p0;
      const bool whole_tile = rows == mr_ && cols == vectors * simd_width;
      // An edge tile is computed aside, its valid part then added to (or written into) the output.
      float* target = whole_tile ? c : tile;
      const std::size_t ldc = whole_tile ? P : nr_;
      const bool add = whole_tile && accumulate;
#if defined(__AVX512F__) || defined(__AVX2__)
      if (fill)
        gather_kernels_[vectors - 1](depth, a, fill_from + c0 * s_.height * s_.width, s_.height * s_.width,
                                     input_vectors_.data() + p0 / simd_width, b_copy, b_rs, target, ldc, add);
      else
#endif
        gemm_kernels_[vectors - 1](depth, a, 0, b, b_rs, target, ldc, add);
      if (whole_tile) return;
      const std::size_t whole = cols / simd_width * simd_width;
      for (std::size_t i = 0; i < rows; ++i) {
        float* ci = c + i * P;
        const float* ti = tile + i * nr_;
        std::size_t q = 0;
        for (; q < whole; q += simd_width) store(ci + q, accumulate ? load(ci + q) + load(ti + q) : load(ti + q));
        for (; q < cols; ++q) ci[q] = accumulate ? ci[q] + ti[q] : ti[q];
      }
    };
    detail::conv2d_for_each_tile(p_.loop_order, chunks, ots, 1, pts,
                                 [&](std::size_t j, std::size_t k, std::size_t, std::size_t t) {
                                   compute(j, ot0 + k, pt0 + t);
                                 });
  }

#if defined(__AVX512F__) || defined(__AVX2__)
  // Gathers the vector of positions from p (a multiple of simd_width) of input channels c0 to
  // c0 + depth of image `from` into d, rows row_stride apart (zero past the last position).
  void gather_copy(const float* from, std::size_t c0, std::size_t depth, std::size_t p, float* d,
                   std::size_t row_stride) const {
    const std::size_t plane = s_.height * s_.width;
    const detail::Conv2dInputVector& in = input_vectors_[p / simd_width];
    for (std::size_t c = 0; c < depth; ++c) detail::conv2d_store_read(d + c * row_stride, in.read(from + (c0 + c) * plane));
  }
#endif

  // Micro-kernels by vectors of positions, output rows and columns, positions per image (and
  // padded to whole vectors), tile rows and columns, whether the input is read from a compact copy.
  bool compact_ = false;
  std::array<detail::MicroKernel, conv2d_max_oc_vectors> gemm_kernels_{};
  detail::Conv2dTileFn tail_ = nullptr;  // the partial last vector of positions (offsets in offset_)
  std::size_t oh_ = 0, ow_ = 0, positions_ = 0, ppad_ = 0, mr_ = 0, nr_ = 0;
  detail::Conv2dBlocks blocks_;
  std::vector<std::int32_t> offset_;  // of the tail kernel's taps (the input channels)
  AlignedBuffer packed_weights_, packed_input_, scratch_;
  std::size_t packed_size_ = 0, per_thread_ = 0;
  // Packing per_thread with a stride other than 1: each thread copies the positions of the block
  // it computes (block_width_ = ow_tiles x nr positions) into its scratch at block_copy_at_.
  bool per_block_ = false;
  std::size_t block_width_ = 0, block_copy_at_ = 0;
  // With AVX-512 or AVX2, the copy of a block is read by the block's first output-channel tile
  // (gather_kernels_, by vectors - 1) as it computes, each vector of positions of an image as
  // input_vectors_ says (where every vector takes at most Conv2dInputVector::max_runs runs).
  bool gather_ = false;
#if defined(__AVX512F__) || defined(__AVX2__)
  std::array<detail::Conv2dGatherKernel, conv2d_max_oc_vectors> gather_kernels_{};
  std::vector<detail::Conv2dInputVector> input_vectors_;
#endif
};

}  // namespace tunekit::cpu
