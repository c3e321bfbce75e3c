#pragma once
/// \file
/// A tunable OpenMP conv2d (NCHW fp32, any stride and padding, dilation 1) and the kernel that
/// tunes it.
///
/// The algorithm is the direct convolution of oneDNN's and TVM's x86 schedules: every output
/// element is a sum over `taps` = in_channels x kernel_h x kernel_w products. A register-blocked
/// inner kernel computes a tile of `ow_tile` output positions of one row times `oc_vectors`
/// vectors of output channels (vectorised with tunekit::cpu::vfloat over output channels); each
/// tap is `oc_vectors` vector loads of packed weights, `ow_tile` broadcast input values and
/// ow_tile x oc_vectors fused multiply-adds on accumulators held in registers. The taps of the
/// inner kernel are read through an offset table, so one instantiation per tile shape (see
/// `conv2d_tile_widths`) serves every layout, reduction order and stride.
///
/// Around the inner kernel: the output channels are split into blocks of `oc_tiles` tiles, the
/// output rows into blocks of `oh_block` rows, each row into blocks of `ow_tiles` tiles, and the
/// reduction into chunks of `ic_block` input channels; partial sums of a block stay in a
/// per-thread accumulator in a channel-blocked (NCHW[oc]c) layout, written to the NCHW output
/// when the block is complete. The loop order inside a block, the loops shared among the OpenMP
/// threads and their schedule are knobs.
///
/// Layouts: `nchw` reads the input in place (tiles that touch the padding or the right edge read
/// a zero-padded copy of their window instead); `nchwc` packs the input into a zero-padded,
/// channel-blocked NCHW[in_cblock]c copy first (in_cblock 1: a zero-padded NCHW copy; for a
/// strided 1x1 kernel without padding, only the pixels it reads), either shared among the threads
/// or one copy per thread. Weights are always packed into [oc tile][tap][oc_vectors x simd_width]
/// panels when a configuration is prepared (inference with pre-packed weights); input packing,
/// when chosen, and the write of the accumulators into the NCHW output are part of every run.
///
/// `gemm1x1`, for a 1x1 kernel without padding, computes the convolution of each image as the
/// GEMM out[oc][p] = sum_ic w[oc][ic] x in[ic][pixel(p)] over its output positions p, with the
/// register-blocked micro-kernel of tunekit/kernels/cpu/gemm.hpp vectorised over output
/// positions: a tile of `oc_rows` output channels x `p_vectors` vectors of positions, each
/// reduction step `p_vectors` vector loads of input, `oc_rows` broadcast weights and
/// oc_rows x p_vectors fused multiply-adds. The output positions of an NCHW plane are
/// contiguous, so tiles are stored straight into the NCHW output (no accumulator, no
/// transposition). The last tile of a plane has fewer vectors where the positions run out; a
/// partial last vector goes, when oc_rows is a multiple of simd_width, to the inner kernel of the
/// direct layouts (its positions x oc_rows channels, vectorised over the channels), otherwise the
/// tile is computed aside and its valid part copied. With stride 1 the input is read in place
/// (its pixels are contiguous too); with any other stride the pixels read are packed into a
/// compact copy: with `packing` shared one [n][ic][p] copy made by all threads first, with
/// per_thread each thread copies the positions of each block it computes. With AVX-512 that copy
/// is made by the block's first output-channel tile as it computes (detail::conv2d_gather_kernel:
/// two masked loads and a permutation per run of lanes, see detail::Conv2dInputVector), so its
/// loads overlap the multiply-adds; otherwise (or where a vector of positions would need more
/// than four runs) by a copy loop just before the block. The weights are packed into
/// [oc tile][ic][oc_rows] panels when the configuration is prepared. The register tile is
/// ow_tile output channels x oc_vectors vectors of positions (the direct layouts' tile knobs,
/// transposed). Blocks, chunks of input channels, loop order and parallel loop are the same knobs
/// as for the direct layouts, over (output channels, positions of the image taken as one row).

#include "tunekit/concepts.hpp"
#include "tunekit/kernel/status.hpp"
#include "tunekit/kernels/cpu/buffer.hpp"
#include "tunekit/kernels/cpu/gemm.hpp"
#include "tunekit/kernels/cpu/simd.hpp"
#include "tunekit/space/search_space.hpp"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cpu {

/// The shape of one NCHW convolution (dilation 1, no bias), in the order of TVM's x86 workload
/// tables: (batch, height, width, in_channels, out_channels, kernel_h, kernel_w, pad_h, pad_w,
/// stride_h, stride_w). Padding is symmetric (pad_h rows above and below, pad_w columns left and
/// right); fill with designated initialisers.
struct Conv2dShape {
  std::size_t batch = 1;
  std::size_t height = 1;
  std::size_t width = 1;
  std::size_t in_channels = 1;
  std::size_t out_channels = 1;
  std::size_t kernel_h = 1;
  std::size_t kernel_w = 1;
  std::size_t pad_h = 0;
  std::size_t pad_w = 0;
  std::size_t stride_h = 1;
  std::size_t stride_w = 1;

  /// Output rows and columns: (height + 2 pad_h - kernel_h) / stride_h + 1, likewise for width.
  constexpr std::size_t out_height() const noexcept {
    return (height + 2 * pad_h - kernel_h) / stride_h + 1;
  }
  constexpr std::size_t out_width() const noexcept {
    return (width + 2 * pad_w - kernel_w) / stride_w + 1;
  }
  /// Products summed per output element: in_channels x kernel_h x kernel_w.
  constexpr std::size_t taps() const noexcept { return in_channels * kernel_h * kernel_w; }
  /// FLOP per convolution: 2 N OC OH OW IC KH KW (a multiply and an add per product).
  constexpr double flop() const noexcept {
    return 2.0 * static_cast<double>(batch) * static_cast<double>(out_channels) *
           static_cast<double>(out_height()) * static_cast<double>(out_width()) *
           static_cast<double>(taps());
  }
  constexpr std::size_t input_size() const noexcept { return batch * in_channels * height * width; }
  constexpr std::size_t weight_size() const noexcept { return out_channels * taps(); }
  constexpr std::size_t output_size() const noexcept {
    return batch * out_channels * out_height() * out_width();
  }

  /// Throws std::invalid_argument naming the bad field: every size and stride positive, the
  /// kernel no larger than the padded input, no tensor over 2^40 elements.
  void validate() const {
    auto positive = [](std::size_t v, const char* field) {
      if (v == 0) throw std::invalid_argument(std::string("Conv2dShape: ") + field + " must be positive");
    };
    positive(batch, "batch");
    positive(height, "height");
    positive(width, "width");
    positive(in_channels, "in_channels");
    positive(out_channels, "out_channels");
    positive(kernel_h, "kernel_h");
    positive(kernel_w, "kernel_w");
    positive(stride_h, "stride_h");
    positive(stride_w, "stride_w");
    if (height + 2 * pad_h < kernel_h || width + 2 * pad_w < kernel_w)
      throw std::invalid_argument("Conv2dShape: kernel larger than the padded input");
    constexpr std::size_t limit = std::size_t{1} << 40;
    if (input_size() > limit || weight_size() > limit || output_size() > limit)
      throw std::invalid_argument("Conv2dShape: tensors over 2^40 elements");
  }

  /// "n1_c64_h56_w56_k64_r3x3_p1x1_s1x1": batch, in channels, height, width, out channels,
  /// kernel, padding, stride.
  std::string to_string() const {
    auto s = [](std::size_t v) { return std::to_string(v); };
    return "n" + s(batch) + "_c" + s(in_channels) + "_h" + s(height) + "_w" + s(width) + "_k" +
           s(out_channels) + "_r" + s(kernel_h) + "x" + s(kernel_w) + "_p" + s(pad_h) + "x" +
           s(pad_w) + "_s" + s(stride_h) + "x" + s(stride_w);
  }

  friend constexpr bool operator==(const Conv2dShape&, const Conv2dShape&) = default;
};

/// The input layout the convolution reads.
enum class Conv2dLayout {
  nchw,    ///< the NCHW input in place; edge tiles read a zero-padded copy of their window
  nchwc,   ///< a zero-padded NCHW[in_cblock]c copy, packed at the start of every run
  gemm1x1  ///< 1x1 kernels without padding: a GEMM over output positions (see the \file comment)
};

/// Who packs the input of the nchwc layout.
enum class Conv2dPacking {
  shared,     ///< the threads share the packing of one copy (its parts move between cores)
  per_thread  ///< each thread packs a whole copy of its own (no data moves between cores)
};

/// The order of the taps inside one chunk of input channels (and of the packed weights).
enum class Conv2dReduction {
  ic_kh_kw,  ///< channel, then kernel row, then kernel column (innermost)
  kh_kw_ic   ///< kernel row, then kernel column, then channel (innermost)
};

/// The order of the loops inside one block of work: over the chunks of input channels (ic), the
/// output-channel tiles (oc) and the tiles of output positions (ow, with the block's rows
/// outside them).
enum class Conv2dLoopOrder { ic_oc_ow, ic_ow_oc, oc_ic_ow };

/// The loops whose blocks are shared among the OpenMP threads (the batch always is); the others
/// run inside each shared iteration.
enum class Conv2dParallel {
  oc,     ///< output-channel blocks
  oh,     ///< output-row blocks
  oc_oh,  ///< both, collapsed, output-channel blocks outer
  oh_oc   ///< both, collapsed, output-row blocks outer
};

/// The output widths of the instantiated inner kernels; each is instantiated for 1 to
/// `conv2d_max_oc_vectors` vectors of output channels where the tile fits 32 vector registers.
inline constexpr std::array<int, 14> conv2d_tile_widths{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 28};
inline constexpr int conv2d_max_oc_vectors = 4;

/// Vector registers of the target: 32 with AVX-512 and on aarch64, 16 otherwise.
#if defined(__AVX512F__) || defined(__aarch64__)
inline constexpr int vector_registers = 32;
#else
inline constexpr int vector_registers = 16;
#endif

/// Registers an inner-kernel tile needs: its accumulators, a vector of weights per output-channel
/// vector and one broadcast input value.
constexpr int conv2d_tile_registers(int ow_tile, int oc_vectors) noexcept {
  return ow_tile * oc_vectors + oc_vectors + 1;
}

/// Whether an inner kernel of this shape is instantiated.
constexpr bool is_conv2d_tile(int ow_tile, int oc_vectors) noexcept {
  if (oc_vectors < 1 || oc_vectors > conv2d_max_oc_vectors) return false;
  if (conv2d_tile_registers(ow_tile, oc_vectors) > 32) return false;
  for (int w : conv2d_tile_widths)
    if (w == ow_tile) return true;
  return false;
}

/// The output channels per register tile of the gemm1x1 layout (the rows its micro-kernel
/// broadcasts); each with 1 to conv2d_max_oc_vectors vectors of output positions where the tile
/// fits the target's vector registers. Fewer than 4 rows load more input than they compute with.
inline constexpr std::array<int, 7> conv2d_gemm_rows{4, 6, 8, 12, 14, 16, 28};

/// Whether (oc_rows, p_vectors) is a register tile of the gemm1x1 layout: its accumulators, its
/// vectors of input and one broadcast weight fit the vector registers.
constexpr bool is_conv2d_gemm_tile(int oc_rows, int p_vectors) noexcept {
  if (p_vectors < 1 || p_vectors > conv2d_max_oc_vectors) return false;
  if (oc_rows * p_vectors + p_vectors + 1 > vector_registers) return false;
  for (int r : conv2d_gemm_rows)
    if (r == oc_rows) return true;
  return false;
}

/// One configuration of the convolution; conv2d_params() decodes a config of conv2d_space().
struct Conv2dParams {
  Conv2dLayout layout = Conv2dLayout::nchwc;
  /// Channels per block of the packed input (nchwc only; 1 for nchw): 1, 2, 4, 8 or 16.
  int in_cblock = 16;
  /// Who packs the input (nchwc only; shared for nchw).
  Conv2dPacking packing = Conv2dPacking::shared;
  /// Inner-kernel tile: output-channel vectors of simd_width lanes, and output positions.
  int oc_vectors = 2;
  int ow_tile = 7;
  /// Blocks of work: output-channel tiles per block, output-position tiles per block (along a
  /// row), output rows per block.
  int oc_tiles = 1;
  int ow_tiles = 1;
  int oh_block = 1;
  /// Input channels per chunk of the reduction.
  int ic_block = 64;
  /// Register tile of the gemm1x1 layout (is_conv2d_gemm_tile): output channels, and
  /// vectors of simd_width output positions. With gemm1x1, a block holds `oc_tiles` tiles of
  /// oc_rows channels times `ow_tiles` tiles of p_vectors x simd_width positions (the output
  /// positions of an image taken as one row); ow_tile, oc_vectors, oh_block, in_cblock and the
  /// reduction order are unused.
  int oc_rows = 8;
  int p_vectors = 1;
  Conv2dReduction reduction = Conv2dReduction::kh_kw_ic;
  Conv2dLoopOrder loop_order = Conv2dLoopOrder::ic_ow_oc;
  Conv2dParallel parallel = Conv2dParallel::oc_oh;
  /// OpenMP schedule of the shared loop.
  omp_sched_t schedule = omp_sched_static;

  /// Throws std::invalid_argument naming the bad field.
  void validate() const {
    if (layout != Conv2dLayout::nchwc && in_cblock != 1)
      throw std::invalid_argument("Conv2dParams: in_cblock must be 1 for the nchw and gemm1x1 layouts");
    if (layout == Conv2dLayout::nchw && packing != Conv2dPacking::shared)
      throw std::invalid_argument("Conv2dParams: the nchw layout packs nothing (packing must be shared)");
    if (layout == Conv2dLayout::gemm1x1 && !is_conv2d_gemm_tile(oc_rows, p_vectors))
      throw std::invalid_argument("Conv2dParams: no gemm1x1 tile of " + std::to_string(oc_rows) +
                                  " channels x " + std::to_string(p_vectors) + " vectors");
    if (in_cblock < 1 || in_cblock > 16 || (in_cblock & (in_cblock - 1)) != 0)
      throw std::invalid_argument("Conv2dParams: in_cblock must be 1, 2, 4, 8 or 16");
    if (layout != Conv2dLayout::gemm1x1 && !is_conv2d_tile(ow_tile, oc_vectors))
      throw std::invalid_argument("Conv2dParams: no inner kernel of " + std::to_string(ow_tile) +
                                  " positions x " + std::to_string(oc_vectors) + " vectors");
    if (oc_tiles < 1 || ow_tiles < 1 || oh_block < 1 || ic_block < 1)
      throw std::invalid_argument("Conv2dParams: block sizes must be positive");
  }
};

/// The straightforward reference: the convolution accumulated in double, and per output element
/// the bound on the rounding error of any fp32 evaluation order,
/// gamma_K * sum |w x| + 1e-30 with K = in_channels x kernel_h x kernel_w taps,
/// gamma_K = K u / (1 - K u), u = 2^-24 (Higham, Accuracy and Stability, eq. 3.5; the bound holds
/// for any order of summation and for fused multiply-adds). Input NCHW, weights OIHW.
inline void conv2d_reference(const Conv2dShape& s, const float* input, const float* weights,
                             std::vector<double>& out, std::vector<double>& bound, int threads = 1) {
  s.validate();
  const std::size_t OH = s.out_height(), OW = s.out_width(), H = s.height, W = s.width;
  out.assign(s.output_size(), 0.0);
  bound.assign(s.output_size(), 0.0);
  const double u = std::ldexp(1.0, -24), ku = static_cast<double>(s.taps()) * u;
  const double gamma = ku / (1.0 - ku);
  const auto planes = static_cast<std::ptrdiff_t>(s.batch * s.out_channels);
#pragma omp parallel for schedule(dynamic) num_threads(std::max(threads, 1))
  for (std::ptrdiff_t plane = 0; plane < planes; ++plane) {
    const auto n = static_cast<std::size_t>(plane) / s.out_channels;
    const auto oc = static_cast<std::size_t>(plane) % s.out_channels;
    double* o = out.data() + static_cast<std::size_t>(plane) * OH * OW;
    double* b = bound.data() + static_cast<std::size_t>(plane) * OH * OW;
    for (std::size_t ic = 0; ic < s.in_channels; ++ic) {
      const float* x = input + (n * s.in_channels + ic) * H * W;
      for (std::size_t r = 0; r < s.kernel_h; ++r)
        for (std::size_t c = 0; c < s.kernel_w; ++c) {
          const double w = weights[((oc * s.in_channels + ic) * s.kernel_h + r) * s.kernel_w + c];
          for (std::size_t oh = 0; oh < OH; ++oh) {
            // Input row ih = oh * stride_h + r - pad_h, column iw = ow * stride_w + c - pad_w.
            const std::size_t ih_padded = oh * s.stride_h + r;
            if (ih_padded < s.pad_h || ih_padded - s.pad_h >= H) continue;
            const float* xr = x + (ih_padded - s.pad_h) * W;
            for (std::size_t ow = 0; ow < OW; ++ow) {
              const std::size_t iw_padded = ow * s.stride_w + c;
              if (iw_padded < s.pad_w || iw_padded - s.pad_w >= W) continue;
              const double p = w * static_cast<double>(xr[iw_padded - s.pad_w]);
              o[oh * OW + ow] += p;
              b[oh * OW + ow] += std::abs(p);
            }
          }
        }
    }
    for (std::size_t i = 0; i < OH * OW; ++i) b[i] = gamma * b[i] + 1e-30;
  }
}

namespace detail {

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
  if (accumulate) {
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] = load(acc + p * OCW + v * W);
  } else {
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] = vfloat{};
  }
  for (std::size_t t = 0; t < taps; ++t, w += OCW) {
    const float* x = in + off[t];
    vfloat wv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) wv[v] = load(w + v * W);
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p) {
      const float xp = x[p * ps];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) a[p][v] += xp * wv[v];
    }
  }
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) store(acc + p * OCW + v * W, a[p][v]);
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

inline Conv2dTileFn find_conv2d_tile(int ow_tile, int oc_vectors) {
  for (std::size_t i = 0; i < conv2d_tile_widths.size(); ++i)
    if (conv2d_tile_widths[i] == ow_tile && oc_vectors >= 1 && oc_vectors <= conv2d_max_oc_vectors)
      return conv2d_tiles[i * conv2d_max_oc_vectors + static_cast<std::size_t>(oc_vectors - 1)];
  return nullptr;
}

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

/// The even lanes of a followed by the even lanes of b.
template <std::size_t... J>
inline vfloat even_lanes(vfloat a, vfloat b, std::index_sequence<J...>) noexcept {
#if defined(__clang__)
  return __builtin_shufflevector(a, b, (2 * static_cast<int>(J))...);
#else
  return __builtin_shuffle(a, b, vint32{(2 * static_cast<int>(J))...});
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

/// Copies a block of a channel-blocked accumulator (`rows` rows of [position][OCW], row stride
/// `acc_row_stride`) into NCHW: `channels` channels of `positions` positions per row. A block of
/// whole output rows is one contiguous run per channel. Runs go in transposed simd_width x
/// simd_width blocks; the last block of a run overlaps the one before it (rewriting equal values)
/// rather than running past the run; runs shorter than simd_width and odd channels go element
/// by element.
template <int OCW>
void conv2d_write_block(const float* acc, std::size_t acc_row_stride, std::size_t rows,
                        std::size_t channels, std::size_t positions, float* out,
                        std::size_t out_channel_stride, std::size_t out_row_stride) {
  constexpr std::size_t W = simd_width;
  const bool whole_rows = positions == out_row_stride;
  const std::size_t runs = whole_rows ? 1 : rows, length = whole_rows ? rows * positions : positions;
  const std::size_t whole_channels = channels / W * W;
  for (std::size_t run = 0; run < runs; ++run) {
    const std::size_t first = run * positions;  // flattened (row, position) index of the run
    float* dst = out + run * out_row_stride;
    auto source = [&](std::size_t f) {  // accumulator of flattened position first + f
      const std::size_t g = first + f;
      return acc + g / positions * acc_row_stride + g % positions * OCW;
    };
    for (std::size_t c0 = 0; c0 < whole_channels; c0 += W) {
      if (length >= W) {
        for (std::size_t g0 = 0; g0 < length; g0 += W) {
          const std::size_t p0 = std::min(g0, length - W);
          vfloat v[simd_width];
          std::size_t r = (first + p0) / positions, p = (first + p0) % positions;
          for (std::size_t q = 0; q < W; ++q) {
            v[q] = load(acc + r * acc_row_stride + p * OCW + c0);
            if (++p == positions) p = 0, ++r;
          }
          transpose(v);
          for (std::size_t i = 0; i < W; ++i) store(dst + (c0 + i) * out_channel_stride + p0, v[i]);
        }
      } else {
        vfloat v[simd_width];
        for (std::size_t q = 0; q < W; ++q) v[q] = q < length ? load(source(q) + c0) : vfloat{};
        transpose(v);
        alignas(64) float t[simd_width][simd_width];
        for (std::size_t i = 0; i < W; ++i) store(t[i], v[i]);
        for (std::size_t i = 0; i < W; ++i)
          for (std::size_t q = 0; q < length; ++q) dst[(c0 + i) * out_channel_stride + q] = t[i][q];
      }
    }
    for (std::size_t c = whole_channels; c < channels; ++c)
      for (std::size_t q = 0; q < length; ++q) dst[c * out_channel_stride + q] = source(q)[c];
  }
}

/// The gemm1x1 micro-kernels of tiles with MR output channels, indexed by vectors of positions
/// - 1 (the last tile of a row of positions may have fewer vectors than the others); null
/// where MR x vectors does not fit the registers.
template <int MR>
constexpr std::array<MicroKernel, conv2d_max_oc_vectors> conv2d_gemm_row_kernels() {
  std::array<MicroKernel, conv2d_max_oc_vectors> k{};
  [&]<std::size_t... V>(std::index_sequence<V...>) {
    ((k[V] = [] {
       if constexpr (is_conv2d_gemm_tile(MR, static_cast<int>(V) + 1))
         return &micro_kernel<MR, static_cast<int>(V) + 1, 4, true>;
       else
         return MicroKernel{nullptr};
     }()),
     ...);
  }(std::make_index_sequence<conv2d_max_oc_vectors>());
  return k;
}

/// The micro-kernels of the gemm1x1 tile (oc_rows, p_vectors), indexed by vectors - 1. Throws
/// std::invalid_argument for a tile that is not is_conv2d_gemm_tile.
inline std::array<MicroKernel, conv2d_max_oc_vectors> conv2d_gemm_kernels(int oc_rows, int p_vectors) {
  if (!is_conv2d_gemm_tile(oc_rows, p_vectors))
    throw std::invalid_argument("Conv2dPlan: no gemm1x1 tile of " + std::to_string(oc_rows) + " x " +
                                std::to_string(p_vectors));
  static constexpr auto table = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array{conv2d_gemm_row_kernels<conv2d_gemm_rows[I]>()...};
  }(std::make_index_sequence<conv2d_gemm_rows.size()>());
  std::size_t i = 0;
  while (conv2d_gemm_rows[i] != oc_rows) ++i;
  return table[i];
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
      const __m512 g = in[v].read(src + k * src_rs);
      _mm512_storeu_ps(copy + k * copy_rs + v * W, g);
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
        if constexpr (is_conv2d_gemm_tile(MR, static_cast<int>(V) + 1))
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

/// A configuration of the convolution made ready to run on one shape: weights packed, offset
/// tables computed, packed-input and per-thread buffers allocated. Calling it computes the
/// convolution of an NCHW input into an NCHW output; it allocates nothing.
class Conv2dPlan {
 public:
  /// Packs `weights` (OIHW) for the configuration. Throws std::invalid_argument for bad
  /// parameters or a shape whose offsets do not fit 32 bits, std::bad_alloc when out of memory.
  Conv2dPlan(const Conv2dShape& shape, const Conv2dParams& params, const float* weights, int threads)
      : s_(shape), p_(params), threads_(threads) {
    s_.validate();
    p_.validate();
    if (threads < 1) throw std::invalid_argument("Conv2dPlan: threads must be at least 1");
    if (p_.layout == Conv2dLayout::gemm1x1) {
      set_up_gemm(weights);
      return;
    }
    tile_ = detail::find_conv2d_tile(p_.ow_tile, p_.oc_vectors);
    if (!tile_) throw std::invalid_argument("Conv2dPlan: no inner kernel for this tile");

    oh_ = s_.out_height();
    ow_ = s_.out_width();
    ocw_ = static_cast<std::size_t>(p_.oc_vectors * simd_width);
    P_ = static_cast<std::size_t>(p_.ow_tile);
    oc_tiles_total_ = (s_.out_channels + ocw_ - 1) / ocw_;
    ow_tiles_total_ = (ow_ + P_ - 1) / P_;
    oc_tiles_ = std::min<std::size_t>(static_cast<std::size_t>(p_.oc_tiles), oc_tiles_total_);
    ow_tiles_ = std::min<std::size_t>(static_cast<std::size_t>(p_.ow_tiles), ow_tiles_total_);
    oh_block_ = std::min<std::size_t>(static_cast<std::size_t>(p_.oh_block), oh_);
    ic_block_ = std::min<std::size_t>(static_cast<std::size_t>(p_.ic_block), s_.in_channels);
    oc_blocks_ = (oc_tiles_total_ + oc_tiles_ - 1) / oc_tiles_;
    ow_blocks_ = (ow_tiles_total_ + ow_tiles_ - 1) / ow_tiles_;
    oh_blocks_ = (oh_ + oh_block_ - 1) / oh_block_;
    span_ = (P_ - 1) * s_.stride_w + s_.kernel_w;
    cb_ = static_cast<std::size_t>(p_.in_cblock);
    nchwc_ = p_.layout == Conv2dLayout::nchwc;

    // The packed input: rows and columns of zero padding around the image, and on the right as
    // many columns as the last tile of a row reads.
    if (nchwc_) {
      cblocks_ = (s_.in_channels + cb_ - 1) / cb_;
      // A strided 1x1 kernel without padding reads only every stride-th row and column: the copy
      // holds just those (it is then a stride-1 convolution of the copy).
      subsampled_ = s_.kernel_h == 1 && s_.kernel_w == 1 && s_.pad_h == 0 && s_.pad_w == 0 &&
                    (s_.stride_h > 1 || s_.stride_w > 1);
      packed_stride_h_ = subsampled_ ? 1 : s_.stride_h;
      packed_stride_w_ = subsampled_ ? 1 : s_.stride_w;
      packed_rows_ = subsampled_ ? oh_ : s_.height;
      hp_ = subsampled_ ? oh_ : s_.height + 2 * s_.pad_h;
      wp_ = std::max(subsampled_ ? ow_ : s_.width + 2 * s_.pad_w,
                     (ow_tiles_total_ * P_ - 1) * packed_stride_w_ + s_.kernel_w);
      packed_size_ = (s_.batch * cblocks_ * hp_ * wp_ * cb_ + 15) / 16 * 16;
      check_offset(packed_size_);
      per_thread_copy_ = p_.packing == Conv2dPacking::per_thread;
      packed_input_ = AlignedBuffer(packed_size_ * (per_thread_copy_ ? static_cast<std::size_t>(threads_) : 1));
      std::fill(packed_input_.data(), packed_input_.data() + packed_input_.size(), 0.0f);
    } else {
      check_offset(s_.input_size());
    }
    build_taps();
    pack_weights(weights);

    acc_size_ = oc_tiles_ * oh_block_ * ow_tiles_ * P_ * ocw_;
    window_size_ = nchwc_ ? 0 : ic_block_ * s_.kernel_h * span_;
    per_thread_ = (acc_size_ + window_size_ + 15) / 16 * 16;
    scratch_ = AlignedBuffer(per_thread_ * static_cast<std::size_t>(threads_));
    row_interior_.resize(oh_);
    for (std::size_t oh = 0; oh < oh_; ++oh)
      row_interior_[oh] = oh * s_.stride_h >= s_.pad_h &&
                          oh * s_.stride_h - s_.pad_h + s_.kernel_h <= s_.height;
    tile_interior_.resize(ow_tiles_total_);
    for (std::size_t t = 0; t < ow_tiles_total_; ++t) {
      const std::size_t iw = t * P_ * s_.stride_w;
      tile_interior_[t] = iw >= s_.pad_w && iw - s_.pad_w + span_ <= s_.width;
    }
  }

  const Conv2dShape& shape() const noexcept { return s_; }
  const Conv2dParams& params() const noexcept { return p_; }
  int threads() const noexcept { return threads_; }

  /// output = conv2d(input, weights): NCHW fp32 in and out, sized as the shape says.
  void operator()(const float* input, float* output) {
    if (gemm_) {
      run_gemm(input, output);
      return;
    }
    omp_set_schedule(p_.schedule, 0);
#pragma omp parallel num_threads(threads_)
    {
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      const float* in = input;
      if (nchwc_ && per_thread_copy_) {
        float* copy = packed_input_.data() + thread * packed_size_;
        for (std::size_t row = 0; row < s_.batch * cblocks_ * packed_rows_; ++row) pack_row(input, copy, row);
        in = copy;
      } else if (nchwc_) {
        const auto rows = static_cast<std::ptrdiff_t>(s_.batch * cblocks_ * packed_rows_);
#pragma omp for schedule(static)
        for (std::ptrdiff_t row = 0; row < rows; ++row)
          pack_row(input, packed_input_.data(), static_cast<std::size_t>(row));
        in = packed_input_.data();  // complete after the barrier that ends the loop
      }
      Scratch sc{scratch_.data() + per_thread_ * thread};
      sc.window = sc.acc + acc_size_;
      const auto N = s_.batch;
      switch (p_.parallel) {
        case Conv2dParallel::oc: {
          const auto items = static_cast<std::ptrdiff_t>(N * oc_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            for (std::size_t hb = 0; hb < oh_blocks_; ++hb)
              for (std::size_t wb = 0; wb < ow_blocks_; ++wb)
                block(sc, in, output, u / oc_blocks_, u % oc_blocks_, hb, wb);
          }
          break;
        }
        case Conv2dParallel::oh: {
          const auto items = static_cast<std::ptrdiff_t>(N * oh_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            for (std::size_t wb = 0; wb < ow_blocks_; ++wb)
              for (std::size_t cb = 0; cb < oc_blocks_; ++cb)
                block(sc, in, output, u / oh_blocks_, cb, u % oh_blocks_, wb);
          }
          break;
        }
        case Conv2dParallel::oc_oh: {
          const auto items = static_cast<std::ptrdiff_t>(N * oc_blocks_ * oh_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const std::size_t n = u / (oc_blocks_ * oh_blocks_), r = u % (oc_blocks_ * oh_blocks_);
            for (std::size_t wb = 0; wb < ow_blocks_; ++wb)
              block(sc, in, output, n, r / oh_blocks_, r % oh_blocks_, wb);
          }
          break;
        }
        case Conv2dParallel::oh_oc: {
          const auto items = static_cast<std::ptrdiff_t>(N * oh_blocks_ * oc_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const std::size_t n = u / (oc_blocks_ * oh_blocks_), r = u % (oc_blocks_ * oh_blocks_);
            for (std::size_t wb = 0; wb < ow_blocks_; ++wb)
              block(sc, in, output, n, r % oc_blocks_, r / oc_blocks_, wb);
          }
          break;
        }
      }
    }
  }

 private:
  struct Scratch {
    float* acc;
    float* window = nullptr;
    // The window in `window`: batch, chunk, row and tile it holds (none at first).
    std::size_t key[4] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  };

  // The gemm1x1 layout: out[n][oc][p] = sum_ic w[oc][ic] x[n][ic][pixel(p)] over the P output
  // positions p of an image, pixel(p) = (p / OW) stride_h W + (p % OW) stride_w. Weights are
  // packed into [oc tile][ic][oc_rows] panels (zero past the last channel); the input is read in
  // place (stride 1) or from a compact copy of the pixels read (any other stride): with packing
  // shared one [n][ic][p] copy made by all threads together, rows padded to ppad_ (a multiple of
  // simd_width) with zeros; with packing per_thread each thread copies the positions of the block
  // it computes next, just before (no barrier, no position copied twice by a thread).
  void set_up_gemm(const float* weights) {
    if (s_.kernel_h != 1 || s_.kernel_w != 1 || s_.pad_h != 0 || s_.pad_w != 0)
      throw std::invalid_argument("Conv2dPlan: the gemm1x1 layout needs a 1x1 kernel without padding");
    if (p_.in_cblock != 1) throw std::invalid_argument("Conv2dPlan: the gemm1x1 layout needs in_cblock 1");
    gemm_ = true;
    gemm_kernels_ = detail::conv2d_gemm_kernels(p_.oc_rows, p_.p_vectors);
    oh_ = s_.out_height();
    ow_ = s_.out_width();
    positions_ = oh_ * ow_;
    ppad_ = (positions_ + simd_width - 1) / simd_width * simd_width;
    mr_ = static_cast<std::size_t>(p_.oc_rows);
    nr_ = static_cast<std::size_t>(p_.p_vectors * simd_width);
    oc_tiles_total_ = (s_.out_channels + mr_ - 1) / mr_;
    ow_tiles_total_ = (positions_ + nr_ - 1) / nr_;
    oc_tiles_ = std::min<std::size_t>(static_cast<std::size_t>(p_.oc_tiles), oc_tiles_total_);
    ow_tiles_ = std::min<std::size_t>(static_cast<std::size_t>(p_.ow_tiles), ow_tiles_total_);
    ic_block_ = std::min<std::size_t>(static_cast<std::size_t>(p_.ic_block), s_.in_channels);
    oc_blocks_ = (oc_tiles_total_ + oc_tiles_ - 1) / oc_tiles_;
    ow_blocks_ = (ow_tiles_total_ + ow_tiles_ - 1) / ow_tiles_;
    compact_ = s_.stride_h != 1 || s_.stride_w != 1;
    per_block_ = compact_ && p_.packing == Conv2dPacking::per_thread;
    block_width_ = ow_tiles_ * nr_;
    const std::size_t IC = s_.in_channels;
    if (compact_ && !per_block_) {
      packed_size_ = (s_.batch * IC * ppad_ + 15) / 16 * 16;
      packed_input_ = AlignedBuffer(packed_size_);
      std::fill(packed_input_.data(), packed_input_.data() + packed_input_.size(), 0.0f);
    }
    packed_weights_ = AlignedBuffer(oc_tiles_total_ * IC * mr_);
    for (std::size_t ot = 0; ot < oc_tiles_total_; ++ot)
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
      check_offset(IC * row_stride);
      offset_.resize(IC);
      for (std::size_t c = 0; c < IC; ++c) offset_[c] = static_cast<std::int32_t>(c * row_stride);
    }
#if defined(__AVX512F__)
    // Copies per block: each block's first output-channel tile reads its vectors of positions
    // straight from the input and leaves them in the copy (detail::conv2d_gather_kernel), each
    // vector as input_vectors_ says (pixel offsets from the image's plane of input channel 0).
    if (per_block_) {
      gather_ = true;
      input_vectors_.resize(ppad_ / simd_width);
      for (std::size_t q = 0; q < input_vectors_.size(); ++q) {
        std::int32_t pixel[simd_width];
        const std::size_t p0 = q * simd_width, count = std::min<std::size_t>(simd_width, positions_ - p0);
        for (std::size_t j = 0; j < count; ++j)
          pixel[j] = static_cast<std::int32_t>(((p0 + j) / ow_) * s_.stride_h * s_.width + ((p0 + j) % ow_) * s_.stride_w);
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
        const vfloat e = detail::even_lanes(lo, hi, std::make_index_sequence<simd_width>());
        if (x + v <= x1)
          store(d + (x - x0), e);
        else
          store_first(d + (x - x0), e, x1 - x);
      }
    }
    for (; x < x1; ++x) d[x - x0] = row[x * sw];
  }

  // One row of the shared compact copy: output row oh of channel c of image n
  // (u = (n IC + c) OH + oh).
  void pack_gemm_row(const float* input, float* packed, std::size_t u) const {
    const std::size_t oh = u % oh_, plane = u / oh_;
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

  void run_gemm(const float* input, float* output) {
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
      std::size_t copied = SIZE_MAX;  // the block of positions in block_copy: n * ow_blocks_ + pb
      const auto N = s_.batch;
      auto run_block = [&](std::size_t n, std::size_t cb, std::size_t pb) {
        if (!per_block_) {
          gemm_block(in + n * s_.in_channels * row_stride, row_stride, 0, output, scratch, n, cb, pb);
          return;
        }
        const float* fill_from = nullptr;  // the image the block's first tile gathers its copy from
        if (copied != n * ow_blocks_ + pb) {
          if (!gather_)
            pack_gemm_block(input, n, pb, block_copy);
          else
            fill_from = input + n * s_.in_channels * s_.height * s_.width;
          copied = n * ow_blocks_ + pb;
        }
        gemm_block(block_copy, block_width_, pb * block_width_, output, scratch, n, cb, pb, fill_from);
      };
      switch (p_.parallel) {
        case Conv2dParallel::oc: {
          const auto items = static_cast<std::ptrdiff_t>(N * oc_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            for (std::size_t pb = 0; pb < ow_blocks_; ++pb) run_block(u / oc_blocks_, u % oc_blocks_, pb);
          }
          break;
        }
        case Conv2dParallel::oh: {
          const auto items = static_cast<std::ptrdiff_t>(N * ow_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            for (std::size_t cb = 0; cb < oc_blocks_; ++cb) run_block(u / ow_blocks_, cb, u % ow_blocks_);
          }
          break;
        }
        case Conv2dParallel::oc_oh: {
          const auto items = static_cast<std::ptrdiff_t>(N * oc_blocks_ * ow_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const std::size_t r = u % (oc_blocks_ * ow_blocks_);
            run_block(u / (oc_blocks_ * ow_blocks_), r / ow_blocks_, r % ow_blocks_);
          }
          break;
        }
        case Conv2dParallel::oh_oc: {
          const auto items = static_cast<std::ptrdiff_t>(N * ow_blocks_ * oc_blocks_);
#pragma omp for schedule(runtime)
          for (std::ptrdiff_t i = 0; i < items; ++i) {
            const auto u = static_cast<std::size_t>(i);
            const std::size_t r = u % (oc_blocks_ * ow_blocks_);
            run_block(u / (oc_blocks_ * ow_blocks_), r % oc_blocks_, r / oc_blocks_);
          }
          break;
        }
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
    const std::size_t ot0 = cb * oc_tiles_, ots = std::min(oc_tiles_, oc_tiles_total_ - ot0);
    const std::size_t pt0 = pb * ow_tiles_, pts = std::min(ow_tiles_, ow_tiles_total_ - pt0);
    const std::size_t chunks = (IC + ic_block_ - 1) / ic_block_;
    float* edge = scratch;             // IC x nr: the last tile of positions, zero-padded
    float* tile = scratch + IC * nr_;  // mr x nr
    float* rest = tile + mr_ * nr_;    // (P % simd_width) x mr
    // Read in place, a last tile with a partial vector would read past its rows: copy it (unless
    // the partial vector goes to the tail kernel, which reads only its positions).
    const std::size_t last_p0 = (ow_tiles_total_ - 1) * nr_;
    const bool edge_copy = !compact_ && !tail_ && P % simd_width != 0 && pt0 + pts == ow_tiles_total_;
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
      const std::size_t c0 = j * ic_block_, depth = std::min(ic_block_, IC - c0);
      const float* a = packed_weights_.data() + (ot * IC + c0) * mr_;
      const float* b = image + c0 * row_stride + (p0 - first);
      const bool accumulate = j > 0;
      // With fill_from, the first tile writes the copy that b reads.
      [[maybe_unused]] const bool fill = fill_from != nullptr && ot == ot0;
      [[maybe_unused]] float* b_copy = fill ? scratch + block_copy_at_ + c0 * row_stride + (p0 - first) : nullptr;
      if (tail_ && cols % simd_width != 0) {  // the partial vector: positions x channel vectors
        const std::size_t whole = cols / simd_width * simd_width, r = cols - whole;
#if defined(__AVX512F__)
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
#if defined(__AVX512F__)
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
    switch (p_.loop_order) {
      case Conv2dLoopOrder::ic_oc_ow:
        for (std::size_t j = 0; j < chunks; ++j)
          for (std::size_t k = 0; k < ots; ++k)
            for (std::size_t t = 0; t < pts; ++t) compute(j, ot0 + k, pt0 + t);
        break;
      case Conv2dLoopOrder::ic_ow_oc:
        for (std::size_t j = 0; j < chunks; ++j)
          for (std::size_t t = 0; t < pts; ++t)
            for (std::size_t k = 0; k < ots; ++k) compute(j, ot0 + k, pt0 + t);
        break;
      case Conv2dLoopOrder::oc_ic_ow:
        for (std::size_t k = 0; k < ots; ++k)
          for (std::size_t j = 0; j < chunks; ++j)
            for (std::size_t t = 0; t < pts; ++t) compute(j, ot0 + k, pt0 + t);
        break;
    }
  }

#if defined(__AVX512F__)
  // Gathers the vector of positions from p (a multiple of simd_width) of input channels c0 to
  // c0 + depth of image `from` into d, rows row_stride apart (zero past the last position).
  void gather_copy(const float* from, std::size_t c0, std::size_t depth, std::size_t p, float* d,
                   std::size_t row_stride) const {
    const std::size_t plane = s_.height * s_.width;
    const detail::Conv2dInputVector& in = input_vectors_[p / simd_width];
    for (std::size_t c = 0; c < depth; ++c) _mm512_storeu_ps(d + c * row_stride, in.read(from + (c0 + c) * plane));
  }
#endif

  static void check_offset(std::size_t n) {
    if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw std::invalid_argument("Conv2dPlan: input too large for 32-bit tap offsets");
  }

  // The taps in reduction order, chunk by chunk: their input offsets in the input (nchw: in
  // place; nchwc: the packed copy), in a window copy (nchw), and their channel, row, column.
  void build_taps() {
    const std::size_t IC = s_.in_channels, KH = s_.kernel_h, KW = s_.kernel_w;
    const std::size_t chunks = (IC + ic_block_ - 1) / ic_block_;
    chunk_begin_.assign(chunks + 1, 0);
    std::vector<std::array<std::size_t, 3>> taps;  // (channel, row, column)
    taps.reserve(s_.taps());
    for (std::size_t j = 0; j < chunks; ++j) {
      chunk_begin_[j] = taps.size();
      const std::size_t c0 = j * ic_block_, c1 = std::min(IC, c0 + ic_block_);
      if (p_.reduction == Conv2dReduction::ic_kh_kw) {
        for (std::size_t c = c0; c < c1; ++c)
          for (std::size_t r = 0; r < KH; ++r)
            for (std::size_t k = 0; k < KW; ++k) taps.push_back({c, r, k});
      } else {
        for (std::size_t r = 0; r < KH; ++r)
          for (std::size_t k = 0; k < KW; ++k)
            for (std::size_t c = c0; c < c1; ++c) taps.push_back({c, r, k});
      }
    }
    chunk_begin_[chunks] = taps.size();
    taps_ = taps;
    offset_.resize(taps.size());
    window_offset_.resize(taps.size());
    for (std::size_t t = 0; t < taps.size(); ++t) {
      const auto [c, r, k] = taps[t];
      std::size_t o;
      if (nchwc_)
        o = ((c / cb_) * hp_ * wp_ + r * wp_ + k) * cb_ + c % cb_;
      else
        o = (c * s_.height + r) * s_.width + k;
      offset_[t] = static_cast<std::int32_t>(o);
      window_offset_[t] = static_cast<std::int32_t>(((c % ic_block_) * KH + r) * span_ + k);
    }
  }

  // Weights OIHW -> [oc tile][tap in reduction order][OCW], zero past the last output channel.
  void pack_weights(const float* weights) {
    const std::size_t taps = taps_.size(), OC = s_.out_channels;
    packed_weights_ = AlignedBuffer(oc_tiles_total_ * taps * ocw_);
    for (std::size_t ot = 0; ot < oc_tiles_total_; ++ot)
      for (std::size_t t = 0; t < taps; ++t) {
        const auto [c, r, k] = taps_[t];
        float* d = packed_weights_.data() + (ot * taps + t) * ocw_;
        for (std::size_t o = 0; o < ocw_; ++o) {
          const std::size_t oc = ot * ocw_ + o;
          d[o] = oc < OC ? weights[((oc * s_.in_channels + c) * s_.kernel_h + r) * s_.kernel_w + k] : 0.0f;
        }
      }
  }

  // NCHW -> the interior of the zero-padded NCHW[cb]c copy at `packed`: one row of one channel
  // block (u = (n * packed_rows + row) * cblocks + block, so that threads sharing the rows in
  // order pack the rows they read when the output rows are shared the same way); a subsampled
  // copy takes input row row * stride_h, columns 0, stride_w, 2 stride_w, ...
  void pack_row(const float* input, float* packed, std::size_t u) const {
    const std::size_t H = s_.height, W = s_.width, IC = s_.in_channels, cb = cb_;
    const std::size_t blk = u % cblocks_, row = (u / cblocks_) % packed_rows_, n = u / (packed_rows_ * cblocks_);
    const std::size_t ih = subsampled_ ? row * s_.stride_h : row;
    float* d = packed + (((n * cblocks_ + blk) * hp_ + row + (subsampled_ ? 0 : s_.pad_h)) * wp_ +
                         (subsampled_ ? 0 : s_.pad_w)) * cb;
    const std::size_t c0 = blk * cb, cn = std::min(cb, IC - c0);
    const float* src = input + ((n * IC + c0) * H + ih) * W;
    if (subsampled_) {
      const std::size_t sw = s_.stride_w;
      std::size_t x = 0;
      if (sw == 2 && cb == static_cast<std::size_t>(simd_width) && cn == cb) {
        // simd_width columns of each channel from two vectors (their even lanes), transposed; the
        // last, narrower block of a row from partial loads of what is left of each row.
        for (; x < ow_; x += cb) {
          const std::size_t cols = std::min(cb, ow_ - x), left = W - 2 * x;  // input columns left
          vfloat v[simd_width];
          for (std::size_t c = 0; c < cb; ++c) {
            const float* p = src + c * H * W + 2 * x;
            const vfloat lo = left >= cb ? load(p) : load_first(p, left);
            const vfloat hi = left >= 2 * cb ? load(p + cb) : left > cb ? load_first(p + cb, left - cb) : vfloat{};
            v[c] = detail::even_lanes(lo, hi, std::make_index_sequence<simd_width>());
          }
          detail::transpose(v);
          for (std::size_t q = 0; q < cols; ++q) store(d + (x + q) * cb, v[q]);
        }
      }
      for (std::size_t c = 0; c < cn; ++c)
        for (std::size_t xx = x; xx < ow_; ++xx) d[xx * cb + c] = src[c * H * W + xx * sw];
      return;
    }
    if (cb == 1) {
      std::copy(src, src + W, d);
      return;
    }
    std::size_t iw = 0;
    if (cb == static_cast<std::size_t>(simd_width) && cn == cb) {
      // simd_width x simd_width blocks (channels x columns): load, transpose, store; the last,
      // narrower block of a row from partial loads of what is left of each row.
      for (; iw < W; iw += cb) {
        const std::size_t cols = std::min(cb, W - iw);
        vfloat v[simd_width];
        for (std::size_t c = 0; c < cb; ++c)
          v[c] = cols == cb ? load(src + c * H * W + iw) : load_first(src + c * H * W + iw, cols);
        detail::transpose(v);
        for (std::size_t q = 0; q < cols; ++q) store(d + (iw + q) * cb, v[q]);
      }
    }
    for (std::size_t c = 0; c < cn; ++c)
      for (std::size_t x = iw; x < W; ++x) d[x * cb + c] = src[c * H * W + x];
  }

  // Copies the input window of one tile (the channels of chunk j, kernel_h rows, span columns)
  // into the thread's window buffer, zero outside the image.
  void fill_window(Scratch& sc, const float* input, std::size_t n, std::size_t j, std::size_t oh,
                   std::size_t tile) {
    const std::size_t key[4] = {n, j, oh, tile};
    if (std::equal(key, key + 4, sc.key)) return;
    std::copy(key, key + 4, sc.key);
    const std::size_t H = s_.height, W = s_.width, KH = s_.kernel_h;
    const std::size_t c0 = j * ic_block_, c1 = std::min(s_.in_channels, c0 + ic_block_);
    const std::size_t ih0 = oh * s_.stride_h, iw0 = tile * P_ * s_.stride_w;  // padded coordinates
    float* d = sc.window;
    for (std::size_t c = c0; c < c1; ++c) {
      const float* plane = input + (n * s_.in_channels + c) * H * W;
      for (std::size_t r = 0; r < KH; ++r, d += span_) {
        const std::size_t ih = ih0 + r;
        if (ih < s_.pad_h || ih - s_.pad_h >= H) {
          std::fill(d, d + span_, 0.0f);
          continue;
        }
        const float* row = plane + (ih - s_.pad_h) * W;
        for (std::size_t x = 0; x < span_; ++x) {
          const std::size_t iw = iw0 + x;
          d[x] = iw < s_.pad_w || iw - s_.pad_w >= W ? 0.0f : row[iw - s_.pad_w];
        }
      }
    }
  }

  // One inner-kernel call: chunk j of the taps, output-channel tile `ot`, output row `oh`,
  // position tile `tile`, into the accumulator tile `acc`.
  void tile(Scratch& sc, const float* in, std::size_t n, std::size_t j, std::size_t ot,
            std::size_t oh, std::size_t tile, float* acc) {
    const std::size_t t0 = chunk_begin_[j], taps = chunk_begin_[j + 1] - t0;
    const float* w = packed_weights_.data() + (ot * taps_.size() + t0) * ocw_;
    const std::size_t ow0 = tile * P_;
    if (nchwc_) {
      const float* base = in + (((n * cblocks_) * hp_ + oh * packed_stride_h_) * wp_ + ow0 * packed_stride_w_) * cb_;
      tile_(base, offset_.data() + t0, w, taps, static_cast<std::ptrdiff_t>(packed_stride_w_ * cb_), acc, j > 0);
    } else if (row_interior_[oh] && tile_interior_[tile]) {
      const float* base = in + (n * s_.in_channels * s_.height + oh * s_.stride_h - s_.pad_h) * s_.width +
                          ow0 * s_.stride_w - s_.pad_w;
      tile_(base, offset_.data() + t0, w, taps, static_cast<std::ptrdiff_t>(s_.stride_w), acc, j > 0);
    } else {
      fill_window(sc, in, n, j, oh, tile);
      tile_(sc.window, window_offset_.data() + t0, w, taps, static_cast<std::ptrdiff_t>(s_.stride_w),
            acc, j > 0);
    }
  }

  // One block of work: output-channel block cb, row block hb, position block wb of image n;
  // accumulated in the thread's accumulator, then written to the output.
  void block(Scratch& sc, const float* in, float* output, std::size_t n, std::size_t cb,
             std::size_t hb, std::size_t wb) {
    const std::size_t ot0 = cb * oc_tiles_, ots = std::min(oc_tiles_, oc_tiles_total_ - ot0);
    const std::size_t oh0 = hb * oh_block_, rows = std::min(oh_block_, oh_ - oh0);
    const std::size_t tl0 = wb * ow_tiles_, tls = std::min(ow_tiles_, ow_tiles_total_ - tl0);
    const std::size_t chunks = chunk_begin_.size() - 1;
    const std::size_t tile_size = P_ * ocw_, row_size = ow_tiles_ * tile_size;
    auto acc = [&](std::size_t k, std::size_t r, std::size_t t) {
      return sc.acc + (k * oh_block_ + r) * row_size + t * tile_size;
    };
    switch (p_.loop_order) {
      case Conv2dLoopOrder::ic_oc_ow:
        for (std::size_t j = 0; j < chunks; ++j)
          for (std::size_t k = 0; k < ots; ++k)
            for (std::size_t r = 0; r < rows; ++r)
              for (std::size_t t = 0; t < tls; ++t)
                tile(sc, in, n, j, ot0 + k, oh0 + r, tl0 + t, acc(k, r, t));
        break;
      case Conv2dLoopOrder::ic_ow_oc:
        for (std::size_t j = 0; j < chunks; ++j)
          for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t t = 0; t < tls; ++t)
              for (std::size_t k = 0; k < ots; ++k)
                tile(sc, in, n, j, ot0 + k, oh0 + r, tl0 + t, acc(k, r, t));
        break;
      case Conv2dLoopOrder::oc_ic_ow:
        for (std::size_t k = 0; k < ots; ++k)
          for (std::size_t j = 0; j < chunks; ++j)
            for (std::size_t r = 0; r < rows; ++r)
              for (std::size_t t = 0; t < tls; ++t)
                tile(sc, in, n, j, ot0 + k, oh0 + r, tl0 + t, acc(k, r, t));
        break;
    }
    // The accumulator to NCHW: only the valid channels and positions.
    const std::size_t OC = s_.out_channels, ow0 = tl0 * P_, positions = std::min(tls * P_, ow_ - ow0);
    for (std::size_t k = 0; k < ots; ++k) {
      const std::size_t oc0 = (ot0 + k) * ocw_, channels = std::min(ocw_, OC - oc0);
      float* out = output + ((n * OC + oc0) * oh_ + oh0) * ow_ + ow0;
      const float* a = acc(k, 0, 0);
      switch (p_.oc_vectors) {
        case 1: detail::conv2d_write_block<simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, ow_); break;
        case 2: detail::conv2d_write_block<2 * simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, ow_); break;
        case 3: detail::conv2d_write_block<3 * simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, ow_); break;
        default: detail::conv2d_write_block<4 * simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, ow_); break;
      }
    }
  }

  Conv2dShape s_;
  Conv2dParams p_;
  int threads_;
  detail::Conv2dTileFn tile_ = nullptr;
  std::size_t oh_ = 0, ow_ = 0, ocw_ = 0, P_ = 0;
  std::size_t oc_tiles_total_ = 0, ow_tiles_total_ = 0;
  std::size_t oc_tiles_ = 0, ow_tiles_ = 0, oh_block_ = 0, ic_block_ = 0;
  std::size_t oc_blocks_ = 0, ow_blocks_ = 0, oh_blocks_ = 0;
  // The packed copy: channel block, blocks, rows and columns (padding included), its size, the
  // input rows it holds per channel block, and the strides of the convolution over it.
  std::size_t span_ = 0, cb_ = 1, cblocks_ = 0, hp_ = 0, wp_ = 0, packed_size_ = 0, packed_rows_ = 0;
  std::size_t packed_stride_h_ = 1, packed_stride_w_ = 1;
  bool nchwc_ = false, per_thread_copy_ = false, subsampled_ = false;
  std::vector<std::size_t> chunk_begin_;
  std::vector<std::array<std::size_t, 3>> taps_;
  std::vector<std::int32_t> offset_, window_offset_;
  AlignedBuffer packed_weights_, packed_input_, scratch_;
  std::size_t acc_size_ = 0, window_size_ = 0, per_thread_ = 0;
  std::vector<char> row_interior_, tile_interior_;
  // The gemm1x1 layout: micro-kernels by vectors of positions, positions per image (and padded
  // to whole vectors), tile rows and columns, whether the input is read from a compact copy.
  bool gemm_ = false, compact_ = false;
  std::array<detail::MicroKernel, conv2d_max_oc_vectors> gemm_kernels_{};
  detail::Conv2dTileFn tail_ = nullptr;  // the partial last vector of positions (offsets in offset_)
  std::size_t positions_ = 0, ppad_ = 0, mr_ = 0, nr_ = 0;
  // Packing per_thread with a stride other than 1: each thread copies the positions of the block
  // it computes (block_width_ = ow_tiles x nr positions) into its scratch at block_copy_at_.
  bool per_block_ = false;
  std::size_t block_width_ = 0, block_copy_at_ = 0;
  // With AVX-512, the copy of a block is read by the block's first output-channel tile
  // (gather_kernels_, by vectors - 1) as it computes, each vector of positions of an image as
  // input_vectors_ says (where every vector takes at most Conv2dInputVector::max_runs runs).
  bool gather_ = false;
#if defined(__AVX512F__)
  std::array<detail::Conv2dGatherKernel, conv2d_max_oc_vectors> gather_kernels_{};
  std::vector<detail::Conv2dInputVector> input_vectors_;
#endif
};

/// The search space of the convolution on one shape: layout, input channel block and packing, the
/// register tile (ow_tile output positions x oc_vectors vectors of output channels; transposed
/// for gemm1x1: ow_tile output channels x oc_vectors vectors of output positions), the blocks
/// of output channels, positions and rows, the input-channel chunk, the reduction order, the
/// loop order, the parallel loop and its schedule. Constraints:
/// - the tile is instantiated and fits the target's vector registers (for gemm1x1:
///   is_conv2d_gemm_tile);
/// - nchw reads the input in place (in_cblock 1, nothing to pack);
/// - a 1x1 kernel has one reduction order (the two coincide);
/// - gemm1x1 only for a 1x1 kernel without padding, with in_cblock and oh_block at 1 (unused);
///   with stride 1 it reads the input in place (packing shared);
/// - no block or tile is larger than needed: at most one value of in_cblock and of ic_block
///   covers all input channels and one of oh_block all output rows, blocks and tiles hold no
///   empty row or vector, ow_tile <= out_width (direct layouts);
/// - the per-thread accumulator block of the direct layouts is at most 512 KiB.
/// The shape is in the space's constants (in_channels, out_channels, out_height, out_width) and
/// so is the register count (vector_registers) and the vector width (simd_width).
inline SearchSpace conv2d_space(const Conv2dShape& shape) {
  shape.validate();
  const auto IC = static_cast<std::int64_t>(shape.in_channels);
  const auto OC = static_cast<std::int64_t>(shape.out_channels);
  const auto OH = static_cast<std::int64_t>(shape.out_height());
  const auto OW = static_cast<std::int64_t>(shape.out_width());
  const auto P = OH * OW;
  SearchSpace s;
  s.add_constant("in_channels", IC).add_constant("out_channels", OC);
  s.add_constant("out_height", OH).add_constant("out_width", OW);
  s.add_constant("vector_registers", vector_registers).add_constant("simd_width", simd_width);
  s.add(Knob::categorical("layout", {"nchw", "nchwc", "gemm1x1"}));
  s.add(Knob::power_of_two("in_cblock", std::vector<std::int64_t>{1, 4, 8, 16}));
  s.add(Knob::categorical("packing", {"shared", "per_thread"}));
  s.add(Knob::range("oc_vectors", 1, conv2d_max_oc_vectors));
  s.add(Knob::ordinal("ow_tile", std::vector<std::int64_t>(conv2d_tile_widths.begin(), conv2d_tile_widths.end())));
  s.add(Knob::power_of_two("oc_tiles", 1, 8));
  s.add(Knob::power_of_two("ow_tiles", 1, 8));
  s.add(Knob::power_of_two("oh_block", 1, 8));
  s.add(Knob::power_of_two("ic_block", 4, 512));
  s.add(Knob::categorical("reduction", {"ic_kh_kw", "kh_kw_ic"}));
  s.add(Knob::categorical("loop_order", {"ic_oc_ow", "ic_ow_oc", "oc_ic_ow"}));
  s.add(Knob::categorical("parallel", {"oc", "oh", "oc_oh", "oh_oc"}));
  s.add(Knob::categorical("schedule", {"static", "dynamic"}));

  // Layout values: 0 nchw, 1 nchwc, 2 gemm1x1.
  const bool gemm_shape = shape.kernel_h == 1 && shape.kernel_w == 1 && shape.pad_h == 0 && shape.pad_w == 0;
  const bool unit_stride = shape.stride_h == 1 && shape.stride_w == 1;
  s.add_constraint("layout == gemm1x1 implies a 1x1 kernel without padding",
                   [gemm_shape](const ConfigView& c) { return c["layout"] != 2 || gemm_shape; });
  s.add_constraint("layout == gemm1x1 implies in_cblock == 1 and oh_block == 1 (unused)", [](const ConfigView& c) {
    return c["layout"] != 2 || (c["in_cblock"] == 1 && c["oh_block"] == 1);
  });
  s.add_constraint("layout == gemm1x1 and stride 1 implies packing == shared (the input read in place)",
                   [unit_stride](const ConfigView& c) { return c["layout"] != 2 || !unit_stride || c["packing"] == 0; });
  s.add_constraint("layout == nchw implies in_cblock == 1 and packing == shared", [](const ConfigView& c) {
    return c["layout"] != 0 || (c["in_cblock"] == 1 && c["packing"] == 0);
  });
  const bool one_tap_kernel = shape.kernel_h * shape.kernel_w == 1;
  s.add_constraint("kernel_h * kernel_w == 1 implies reduction == ic_kh_kw (the orders coincide)",
                   [one_tap_kernel](const ConfigView& c) { return !one_tap_kernel || c["reduction"] == 0; });
  s.add_constraint("in_cblock < 2 * in_channels", [IC](const ConfigView& c) { return c["in_cblock"] < 2 * IC; });
  s.add_constraint("ic_block < 2 * in_channels", [IC](const ConfigView& c) { return c["ic_block"] < 2 * IC; });
  s.add_constraint("oh_block < 2 * out_height", [OH](const ConfigView& c) { return c["oh_block"] < 2 * OH; });
  // The direct layouts: tiles of ow_tile positions x oc_vectors vectors of channels.
  s.add_constraint("layout != gemm1x1 implies ow_tile <= out_width",
                   [OW](const ConfigView& c) { return c["layout"] == 2 || c["ow_tile"] <= OW; });
  s.add_constraint(
      "layout != gemm1x1 implies ow_tile * oc_vectors + oc_vectors + 1 <= vector_registers (instantiated tile)",
      [](const ConfigView& c) {
        const auto p = static_cast<int>(c["ow_tile"]), v = static_cast<int>(c["oc_vectors"]);
        return c["layout"] == 2 || (is_conv2d_tile(p, v) && conv2d_tile_registers(p, v) <= vector_registers);
      });
  s.add_constraint("layout != gemm1x1 implies (oc_tiles - 1) * oc_vectors * simd_width < out_channels",
                   [OC](const ConfigView& c) {
                     return c["layout"] == 2 || (c["oc_tiles"] - 1) * c["oc_vectors"] * simd_width < OC;
                   });
  s.add_constraint("layout != gemm1x1 implies (ow_tiles - 1) * ow_tile < out_width", [OW](const ConfigView& c) {
    return c["layout"] == 2 || (c["ow_tiles"] - 1) * c["ow_tile"] < OW;
  });
  s.add_constraint("layout != gemm1x1 implies accumulator oc_tiles * oc_vectors * simd_width * oh_block * "
                   "ow_tiles * ow_tile * 4 <= 512 KiB",
                   [](const ConfigView& c) {
                     return c["layout"] == 2 || c["oc_tiles"] * c["oc_vectors"] * simd_width * c["oh_block"] *
                                                        c["ow_tiles"] * c["ow_tile"] * 4 <= (512 << 10);
                   });
  // gemm1x1: tiles of ow_tile output channels x oc_vectors vectors of positions.
  s.add_constraint("layout == gemm1x1 implies (ow_tile, oc_vectors) is a gemm1x1 tile", [](const ConfigView& c) {
    return c["layout"] != 2 || is_conv2d_gemm_tile(static_cast<int>(c["ow_tile"]), static_cast<int>(c["oc_vectors"]));
  });
  s.add_constraint("layout == gemm1x1 implies (ow_tile - 1) < out_channels and (oc_vectors - 1) * simd_width < "
                   "out_height * out_width",
                   [OC, P](const ConfigView& c) {
                     return c["layout"] != 2 || (c["ow_tile"] - 1 < OC && (c["oc_vectors"] - 1) * simd_width < P);
                   });
  s.add_constraint("layout == gemm1x1 implies (oc_tiles - 1) * ow_tile < out_channels and (ow_tiles - 1) * "
                   "oc_vectors * simd_width < out_height * out_width",
                   [OC, P](const ConfigView& c) {
                     return c["layout"] != 2 || ((c["oc_tiles"] - 1) * c["ow_tile"] < OC &&
                                                 (c["ow_tiles"] - 1) * c["oc_vectors"] * simd_width < P);
                   });
  return s;
}

/// The Conv2dParams of a config of conv2d_space().
inline Conv2dParams conv2d_params(const SearchSpace& s, const Config& c) {
  const ConfigView v = s.view(c);
  static constexpr omp_sched_t schedules[] = {omp_sched_static, omp_sched_dynamic};
  Conv2dParams p;
  p.layout = static_cast<Conv2dLayout>(v["layout"]);
  p.in_cblock = static_cast<int>(v["in_cblock"]);
  p.packing = static_cast<Conv2dPacking>(v["packing"]);
  p.oc_vectors = static_cast<int>(v["oc_vectors"]);
  p.ow_tile = static_cast<int>(v["ow_tile"]);
  p.oc_tiles = static_cast<int>(v["oc_tiles"]);
  p.ow_tiles = static_cast<int>(v["ow_tiles"]);
  p.oh_block = static_cast<int>(v["oh_block"]);
  p.ic_block = static_cast<int>(v["ic_block"]);
  p.reduction = static_cast<Conv2dReduction>(v["reduction"]);
  p.loop_order = static_cast<Conv2dLoopOrder>(v["loop_order"]);
  p.parallel = static_cast<Conv2dParallel>(v["parallel"]);
  p.schedule = schedules[v["schedule"]];
  if (p.layout == Conv2dLayout::gemm1x1) {  // the tile knobs, transposed
    p.oc_rows = p.ow_tile;
    p.p_vectors = p.oc_vectors;
  }
  return p;
}

/// Options of a Conv2dKernel; fill with designated initialisers.
struct Conv2dOptions {
  /// OpenMP threads per run; 0: omp_get_max_threads().
  int threads = 0;
  /// Seed of the random input and weights (uniform in [-1, 1)).
  std::uint64_t seed = 1;
  /// Task name for records; "conv2d_" + the shape's to_string() when empty.
  std::string name;
  /// Test hook: when set, called with the NCHW output after every run of the kernel (a
  /// deliberately perturbed output path, to prove that the verification reports wrong_result).
  std::function<void(std::span<float>)> output_fault;

  void validate() const {
    if (threads < 0) throw std::invalid_argument("Conv2dOptions: threads must be >= 0");
  }
};

/// The convolution of one shape as a tunable kernel, on a random input and random weights.
///
/// `prepare(config)` packs the weights for the configuration (not timed, like inference with
/// pre-packed weights), allocates its buffers and fills the output with NaN, so that an element
/// a configuration does not write fails the check. `run(config, n)` times each of n runs
/// separately with std::chrono::steady_clock; a run is the whole NCHW to NCHW convolution: input
/// packing into NCHWc, when the configuration chooses it, is part of it, weight packing is not.
/// `verify(config)` checks every element of the output of the last run against the
/// double-precision reference computed once at construction: the tolerance is
/// |out - ref| <= gamma_K * sum |w x| + 1e-30 per element, K = in_channels x kernel_h x kernel_w,
/// gamma_K = K u / (1 - K u), u = 2^-24 (see conv2d_reference); a configuration outside it is
/// `wrong_result`, with the largest error and its tolerance in the error text. The evaluators
/// call it after the first run request (a VerifiableKernel). A failure to set a configuration up
/// is `build_error`, an exception while running is `runtime_error`, a config outside the space is
/// `excluded`; nothing throws.
class Conv2dKernel {
 public:
  explicit Conv2dKernel(const Conv2dShape& shape, Conv2dOptions options = {})
      : shape_(shape), options_(std::move(options)), space_(conv2d_space(shape)) {
    options_.validate();
    if (options_.threads == 0) options_.threads = omp_get_max_threads();
    Rng rng(options_.seed);
    input_ = AlignedBuffer(shape_.input_size());
    weights_ = AlignedBuffer(shape_.weight_size());
    output_ = AlignedBuffer(shape_.output_size());
    fill_uniform(input_, rng);
    fill_uniform(weights_, rng);
    conv2d_reference(shape_, input_.data(), weights_.data(), reference_, bound_, options_.threads);
  }

  const SearchSpace& space() const noexcept { return space_; }
  double flop() const noexcept { return shape_.flop(); }
  std::string name() const { return options_.name.empty() ? "conv2d_" + shape_.to_string() : options_.name; }
  std::string device() const { return "cpu"; }
  const Conv2dShape& shape() const noexcept { return shape_; }
  int threads() const noexcept { return options_.threads; }

  /// Sets the configuration up (weight packing, buffers) and fills the output with NaN.
  RunResult prepare(const Config& c) {
    if (RunResult r = set_up(c); r.status != Status::ok) return r;
    std::fill(output_.data(), output_.data() + output_.size(), std::numeric_limits<float>::quiet_NaN());
    return {};
  }

  /// Times `runs` runs of the configuration, each separately (a configuration that was not the
  /// last one prepared is set up first, untimed).
  RunResult run(const Config& c, std::size_t runs, Rng&) {
    if (RunResult r = set_up(c); r.status != Status::ok) return r;
    RunResult out;
    out.seconds.reserve(runs);
    for (std::size_t i = 0; i < runs; ++i) {
      double seconds = 0.0;
      if (RunResult r = compute(seconds); r.status != Status::ok) return r;
      out.seconds.push_back(seconds);
    }
    return out;
  }

  /// Checks the output of the last run (of `c`) against the reference: ok, or wrong_result giving
  /// the largest error, its element and its tolerance.
  RunResult verify(const Config& /*c*/) const {
    double worst_ratio = 0.0;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < output_.size(); ++i) {
      const double err = std::abs(static_cast<double>(output_[i]) - reference_[i]);
      const double ratio = std::isfinite(err) ? err / bound_[i] : HUGE_VAL;
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = i;
      }
    }
    if (worst_ratio <= 1.0) return {};
    const std::size_t OH = shape_.out_height(), OW = shape_.out_width();
    const std::size_t ow = worst % OW, oh = worst / OW % OH, oc = worst / (OW * OH) % shape_.out_channels,
                      n = worst / (OW * OH * shape_.out_channels);
    const double err = std::abs(static_cast<double>(output_[worst]) - reference_[worst]);
    char text[256];
    std::snprintf(text, sizeof text,
                  "max error %.3g exceeds the tolerance %.3g at output[%zu][%zu][%zu][%zu] = %.9g "
                  "(reference %.9g)",
                  err, bound_[worst], n, oc, oh, ow, static_cast<double>(output_[worst]), reference_[worst]);
    return {Status::wrong_result, {}, text, -1.0};
  }

  /// The random input (NCHW) and weights (OIHW), and the output of the last computation (NCHW).
  const float* input() const noexcept { return input_.data(); }
  const float* weights() const noexcept { return weights_.data(); }
  const float* output() const noexcept { return output_.data(); }
  /// The double-precision reference output and its per-element tolerance.
  const std::vector<double>& reference() const noexcept { return reference_; }
  const std::vector<double>& tolerance() const noexcept { return bound_; }

 private:
  RunResult set_up(const Config& c) {
    try {
      if (!space_.is_valid(c))
        return {Status::excluded, {}, "not a valid configuration of the conv2d space", -1.0};
      const auto index = space_.to_index(c);
      if (plan_ && prepared_ == index) return {};
      plan_.reset();
      plan_.emplace(shape_, conv2d_params(space_, c), weights_.data(), options_.threads);
      prepared_ = index;
      return {};
    } catch (const std::bad_alloc&) {
      plan_.reset();
      return {Status::build_error, {}, "out of memory setting up the configuration", -1.0};
    } catch (const std::exception& e) {
      plan_.reset();
      return {Status::build_error, {}, e.what(), -1.0};
    }
  }

  // One timed computation into the output (then the test hook, if any).
  RunResult compute(double& seconds) {
    try {
      seconds = seconds_of([&] { (*plan_)(input_.data(), output_.data()); });
      if (options_.output_fault) options_.output_fault(std::span<float>(output_.data(), output_.size()));
      return {};
    } catch (const std::exception& e) {
      return {Status::runtime_error, {}, e.what(), -1.0};
    }
  }

  Conv2dShape shape_;
  Conv2dOptions options_;
  SearchSpace space_;
  AlignedBuffer input_, weights_, output_;
  std::vector<double> reference_, bound_;
  std::optional<Conv2dPlan> plan_;
  std::uint64_t prepared_ = 0;
};

static_assert(PreparableKernel<Conv2dKernel> && VerifiableKernel<Conv2dKernel>);

}  // namespace tunekit::cpu
