#pragma once
/// \file
/// What the conv2d plans (conv2d/direct.hpp, conv2d/gemm1x1.hpp, conv2d/gemm_rows.hpp) are written against: the shape
/// of a convolution (Conv2dShape), a configuration (Conv2dParams: the layout, the register tile,
/// the blocks, the loop orders), the register tiles that are instantiated, and the
/// double-precision reference with its rounding-error bound (conv2d_reference).

#include "tunekit/kernels/cpu/simd.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
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
  gemm1x1,   ///< 1x1 kernels without padding: a GEMM over output positions (conv2d/gemm1x1.hpp)
  gemm_rows  ///< a GEMM over the taps per output row, vectorised over its positions (conv2d/gemm_rows.hpp)
};

/// Who packs the input of the nchwc layout.
enum class Conv2dPacking {
  shared,     ///< the threads share the packing of one copy (its parts move between cores)
  per_thread  ///< each thread packs a whole copy of its own (no data moves between cores); for a
              ///< strided 1x1 kernel without padding, tile by tile as it computes (direct.hpp)
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

/// The register rule of the conv2d's tiles, on every target: a tile fits when its accumulators,
/// the vectors it loads per reduction step and one register for the scalar it broadcasts fit the
/// vector registers without spilling,
///   accumulators + loaded vectors + 1 <= vector_registers.
/// The direct layouts' tile of P positions x V vectors of output channels loads V weight vectors
/// and broadcasts one input value (P V + V + 1); the gemm1x1 tile of R output channels x V
/// vectors of positions loads V input vectors and broadcasts one weight (R V + V + 1). AVX-512
/// could take the broadcast from memory inside the multiply-add; AVX2 (vbroadcastss) cannot, so
/// the register is counted everywhere. With AVX2's 16 registers the largest tiles are 14 x 1,
/// 6 x 2, 4 x 3 and 2 x 4; with 32: 28 x 1, 14 x 2, 9 x 3 and 6 x 4 (gemm1x1: the row counts of
/// conv2d_gemm_rows within those). conv2d_space offers only the tiles that fit the target, and
/// only the knob values that take part in one.
///
/// The output widths of the instantiated inner kernels; each is instantiated for 1 to
/// `conv2d_max_oc_vectors` vectors of output channels where the tile fits 32 vector registers
/// (on a 16-register target too: Conv2dParams may name them; the search space does not).
inline constexpr std::array<int, 14> conv2d_tile_widths{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 28};
inline constexpr int conv2d_max_oc_vectors = 4;

/// Registers an inner-kernel tile needs: its accumulators, a vector of weights per output-channel
/// vector and one broadcast input value.
constexpr int conv2d_tile_registers(int ow_tile, int oc_vectors) noexcept {
  return register_tile_registers(ow_tile, oc_vectors);
}

/// Whether an inner kernel of this shape is instantiated.
constexpr bool is_conv2d_tile(int ow_tile, int oc_vectors) noexcept {
  if (oc_vectors < 1 || oc_vectors > conv2d_max_oc_vectors) return false;
  if (conv2d_tile_registers(ow_tile, oc_vectors) > 32) return false;
  for (int w : conv2d_tile_widths)
    if (w == ow_tile) return true;
  return false;
}

/// The output channels per register tile of the GEMM layouts, gemm1x1 and gemm_rows (the rows their micro-kernels
/// broadcast); each with 1 to conv2d_max_oc_vectors vectors of output positions where the tile
/// fits the target's vector registers. Fewer than 4 rows load more input than they compute with.
/// With 32 registers up to 28 rows (28 x 1, 14 x 2, 8 x 3, 6 x 4); with 16 (AVX2) up to 14
/// (14 x 1, 6 x 2, 4 x 3), and also 5 and 10, which the 32-register list lacks: 5 x 2 and 10 x 1
/// lie between 4 x 2 and 6 x 2, 8 x 1 and 12 x 1.
inline constexpr std::array<int, 7> conv2d_gemm_rows =
    vector_registers >= 32 ? std::array<int, 7>{4, 6, 8, 12, 14, 16, 28} : std::array<int, 7>{4, 5, 6, 8, 10, 12, 14};

/// Whether (oc_rows, p_vectors) is a register tile of the GEMM layouts: its accumulators, its
/// vectors of input and one broadcast weight fit the vector registers.
constexpr bool is_conv2d_gemm_tile(int oc_rows, int p_vectors) noexcept {
  if (p_vectors < 1 || p_vectors > conv2d_max_oc_vectors) return false;
  if (register_tile_registers(oc_rows, p_vectors) > vector_registers) return false;
  for (int r : conv2d_gemm_rows)
    if (r == oc_rows) return true;
  return false;
}

/// The most tiles per block of work along each of its two axes (the oc_tiles and ow_tiles knobs):
/// 8 with 32 vector registers, 16 with 16, whose tiles hold about half the channels or
/// positions (the 32-register gemm1x1 tiles up to 28 channels or 4 x 16 positions, the
/// 16-register ones up to 14 channels or 3 x 8 positions), so that blocks span the same sizes.
inline constexpr int conv2d_max_block_tiles = vector_registers >= 32 ? 8 : 16;

/// One configuration of the convolution; conv2d_params() decodes a config of conv2d_space().
struct Conv2dParams {
  Conv2dLayout layout = Conv2dLayout::nchwc;
  /// Channels per block of the packed input (nchwc only; 1 for nchw): 1, 2, 4, 8 or 16.
  int in_cblock = 16;
  /// Who packs the input (nchwc, and gemm1x1 with a stride; shared for nchw and gemm_rows).
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
  /// Register tile of the GEMM layouts, gemm1x1 and gemm_rows (is_conv2d_gemm_tile): output
  /// channels, and vectors of simd_width output positions. With gemm1x1, a block holds `oc_tiles`
  /// tiles of oc_rows channels times `ow_tiles` tiles of p_vectors x simd_width positions (the
  /// output positions of an image taken as one row); ow_tile, oc_vectors, oh_block, in_cblock and
  /// the reduction order are unused. With gemm_rows, the same of a row's positions, times
  /// `oh_block` rows; ow_tile, oc_vectors and in_cblock are unused.
  int oc_rows = 8;
  int p_vectors = 1;
  Conv2dReduction reduction = Conv2dReduction::kh_kw_ic;
  Conv2dLoopOrder loop_order = Conv2dLoopOrder::ic_ow_oc;
  Conv2dParallel parallel = Conv2dParallel::oc_oh;
  /// OpenMP schedule of the shared loop.
  omp_sched_t schedule = omp_sched_static;

  /// Throws std::invalid_argument naming the bad field.
  void validate() const {
    const bool gemm = layout == Conv2dLayout::gemm1x1 || layout == Conv2dLayout::gemm_rows;
    if (layout != Conv2dLayout::nchwc && in_cblock != 1)
      throw std::invalid_argument("Conv2dParams: in_cblock must be 1 for the nchw, gemm1x1 and gemm_rows layouts");
    if (layout == Conv2dLayout::nchw && packing != Conv2dPacking::shared)
      throw std::invalid_argument("Conv2dParams: the nchw layout packs nothing (packing must be shared)");
    if (layout == Conv2dLayout::gemm_rows && packing != Conv2dPacking::shared)
      throw std::invalid_argument("Conv2dParams: the gemm_rows layout's copy is shared (packing must be shared)");
    if (gemm && !is_conv2d_gemm_tile(oc_rows, p_vectors))
      throw std::invalid_argument("Conv2dParams: no GEMM tile (gemm1x1, gemm_rows) of " + std::to_string(oc_rows) +
                                  " channels x " + std::to_string(p_vectors) + " vectors");
    if (in_cblock < 1 || in_cblock > 16 || (in_cblock & (in_cblock - 1)) != 0)
      throw std::invalid_argument("Conv2dParams: in_cblock must be 1, 2, 4, 8 or 16");
    if (!gemm && !is_conv2d_tile(ow_tile, oc_vectors))
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

}  // namespace tunekit::cpu
