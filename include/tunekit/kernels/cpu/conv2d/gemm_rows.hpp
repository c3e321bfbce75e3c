#pragma once
/// \file
/// The gemm_rows plan of the conv2d: each output row of each output channel is a sum over the
/// taps (input channel, kernel row, kernel column), computed as a GEMM vectorised over the output
/// positions of the row, out[oc][oh][ow] = sum_t w[oc][t] x in_t[oh][ow], with the register-blocked
/// micro-kernel of tunekit/kernels/cpu/gemm.hpp (micro_kernel_body): a tile of `oc_rows` output
/// channels x `p_vectors` vectors of positions of one row, each tap `p_vectors` vector loads of
/// input, `oc_rows` broadcast weights and oc_rows x p_vectors fused multiply-adds. The tile is
/// stored straight into the NCHW output, whose positions of a row are contiguous: no
/// channel-blocked accumulator and no transposition on the way out, unlike the direct layouts
/// (conv2d/direct.hpp), which vectorise over output channels. It suits layers with few input
/// channels and wide rows (ResNet-18's C1, 7x7/2 over 3 channels, where the direct plan's write of
/// its accumulators into NCHW takes about a tenth of the run).
///
/// The input positions a vector of output positions reads for one tap must be contiguous: every
/// run first copies the input into a zero-padded copy whose rows are split into stride_w phases
/// (column j of a padded row at phase j % stride_w, index j / stride_w; stride 1: one phase, a
/// plain zero-padded copy), so that output positions ow..ow + n read, for tap (c, kh, kw), the
/// phase kw % stride_w of padded row oh stride_h + kh of channel c from index ow + kw / stride_w
/// on. The taps are read through an offset table, in the configured reduction order within each
/// chunk of `ic_block` input channels; the weights are packed into [oc tile][tap][oc_rows] panels
/// in the same order when the configuration is prepared. The threads share the copy (made by all
/// of them, then a barrier). With the reduction kh_kw_ic, whose taps of a kernel row are
/// consecutive in a chunk, the kernel rows that fall wholly into the top or bottom padding for an
/// output row are skipped; the other taps in the padding are multiplied by the copy's zeros.
///
/// Blocks of work: `oc_tiles` tiles of output channels x `oh_block` rows x `ow_tiles` tiles of a
/// row's positions. The last tile of output channels, when oc_rows does not divide them, has a
/// micro-kernel of its own: the fewest rows of conv2d_gemm_rows that hold its channels (64
/// channels in tiles of 6: ten tiles of 6 and one of 4, not of 6 with 2 rows of zeros), its
/// weights packed in panels of that many rows. A tile at the end of a row (a partial vector) or
/// with fewer channels than its kernel's rows is computed aside and its valid part written. Loop
/// order, parallel loop and schedule are the knobs of the other layouts. The register tile is
/// ow_tile output channels x oc_vectors vectors of positions, as for gemm1x1 (the direct plan's
/// tile knobs, transposed).

#include "tunekit/kernels/cpu/buffer.hpp"
#include "tunekit/kernels/cpu/conv2d/blocking.hpp"
#include "tunekit/kernels/cpu/conv2d/gemm1x1.hpp"
#include "tunekit/kernels/cpu/conv2d/shape.hpp"
#include "tunekit/kernels/cpu/conv2d/shuffle.hpp"
#include "tunekit/kernels/cpu/gemm.hpp"
#include "tunekit/kernels/cpu/simd.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tunekit::cpu {
namespace detail {

/// The gemm_rows micro-kernel of oc_rows MR x p_vectors NV (micro_kernel_body): row t of B, the
/// input vector of tap t, starts at b + offset[t]; the k-loop unroll is gemm1x1's
/// (conv2d_gemm_unroll, conv2d/gemm1x1.hpp).
template <int MR, int NV>
void conv2d_rows_kernel(std::size_t taps, const float* a, const float* b, const std::int32_t* offset, float* c,
                        std::size_t ldc, bool accumulate) {
  micro_kernel_body<MR, NV, conv2d_gemm_unroll(MR, NV), true>(
      taps, a, 0, [b, offset](std::size_t t) __attribute__((always_inline)) { return b + offset[t]; }, c, ldc,
      accumulate);
}

using Conv2dRowsKernel = void (*)(std::size_t, const float*, const float*, const std::int32_t*, float*, std::size_t,
                                  bool);

/// The gemm_rows micro-kernel of the tile MR x NV.
template <int MR, int NV>
struct Conv2dRowsEntry {
  static constexpr Conv2dRowsKernel kernel = &conv2d_rows_kernel<MR, NV>;
};

/// The micro-kernels of the gemm_rows tile (oc_rows, p_vectors), indexed by vectors - 1. Throws
/// std::invalid_argument for a tile that is not is_conv2d_gemm_tile.
inline std::array<Conv2dRowsKernel, conv2d_max_oc_vectors> conv2d_rows_kernels(int oc_rows, int p_vectors) {
  return conv2d_gemm_tile_kernels<Conv2dRowsKernel, Conv2dRowsEntry>(oc_rows, p_vectors, "gemm_rows");
}

}  // namespace detail

/// The gemm_rows convolution of a configuration made ready to run on one shape: weights packed,
/// offset table computed, the phase-split copy and per-thread tiles allocated. Calling it computes
/// the convolution of an NCHW input into an NCHW output; it allocates nothing.
class Conv2dGemmRowsPlan : public detail::Conv2dPlanBase {
 public:
  /// Packs `weights` (OIHW) for the configuration. Throws std::invalid_argument for bad
  /// parameters (another layout) or a shape whose offsets do not fit 32 bits, std::bad_alloc when
  /// out of memory.
  Conv2dGemmRowsPlan(const Conv2dShape& shape, const Conv2dParams& params, const float* weights, int threads)
      : Conv2dPlanBase(shape, params, threads) {
    if (p_.layout != Conv2dLayout::gemm_rows)
      throw std::invalid_argument(
          "Conv2dGemmRowsPlan: the other layouts have plans of their own (Conv2dDirectPlan, Conv2dGemm1x1Plan)");
    kernels_ = detail::conv2d_rows_kernels(p_.oc_rows, p_.p_vectors);
    oh_ = s_.out_height();
    ow_ = s_.out_width();
    mr_ = static_cast<std::size_t>(p_.oc_rows);
    nr_ = static_cast<std::size_t>(p_.p_vectors * simd_width);
    blocks_ = detail::Conv2dBlocks(s_, p_, mr_, ow_, nr_);
    // The last tile of output channels: the fewest rows of a GEMM tile that hold its channels.
    const std::size_t last_channels = s_.out_channels - (blocks_.oc_tiles_total - 1) * mr_;
    edge_mr_ = mr_;
    for (int r : conv2d_gemm_rows)
      if (static_cast<std::size_t>(r) >= last_channels && static_cast<std::size_t>(r) < edge_mr_)
        edge_mr_ = static_cast<std::size_t>(r);
    edge_kernels_ = edge_mr_ == mr_ ? kernels_ : detail::conv2d_rows_kernels(static_cast<int>(edge_mr_), p_.p_vectors);
    // With kh_kw_ic the kernel rows in the padding are left out.
    padding_rows_ = detail::conv2d_padding_rows(s_, p_.reduction == Conv2dReduction::kh_kw_ic);
    oh_block_ = std::min<std::size_t>(static_cast<std::size_t>(p_.oh_block), oh_);
    oh_blocks_ = (oh_ + oh_block_ - 1) / oh_block_;
    // The copy: per image and channel, the padded rows, each stride_w phases of phase_ floats;
    // a phase holds its share of the padded row and what the row's last tile reads past it
    // (whole vectors of positions from index kw / stride_w on), zeros.
    const std::size_t sw = s_.stride_w, KH = s_.kernel_h, KW = s_.kernel_w, IC = s_.in_channels;
    const std::size_t padded_width = s_.width + 2 * s_.pad_w;
    phase_ = std::max((padded_width + sw - 1) / sw, blocks_.ow_tiles_total * nr_ + (KW - 1) / sw);
    phase_ = (phase_ + simd_width - 1) / simd_width * simd_width;
    row_stride_ = sw * phase_;
    plane_ = (s_.height + 2 * s_.pad_h) * row_stride_;
    image_ = IC * plane_;
    detail::conv2d_check_offset(image_);
    copy_ = AlignedBuffer(s_.batch * image_);
    std::fill(copy_.data(), copy_.data() + copy_.size(), 0.0f);
    // Taps in the order of the packed weights: chunk by chunk of ic_block channels, within a chunk
    // by the reduction order.
    taps_ = IC * KH * KW;
    offset_.resize(taps_);
    std::vector<std::size_t> tap_weight(taps_);  // the tap's (ic, kh, kw) index in OIHW weights
    std::size_t t = 0;
    auto add = [&](std::size_t c, std::size_t kh, std::size_t kw) {
      offset_[t] = static_cast<std::int32_t>(c * plane_ + kh * row_stride_ + kw % sw * phase_ + kw / sw);
      tap_weight[t++] = (c * KH + kh) * KW + kw;
    };
    for (std::size_t c0 = 0; c0 < IC; c0 += blocks_.ic_block) {
      const std::size_t c1 = std::min(IC, c0 + blocks_.ic_block);
      if (p_.reduction == Conv2dReduction::ic_kh_kw) {
        for (std::size_t c = c0; c < c1; ++c)
          for (std::size_t kh = 0; kh < KH; ++kh)
            for (std::size_t kw = 0; kw < KW; ++kw) add(c, kh, kw);
      } else {
        for (std::size_t kh = 0; kh < KH; ++kh)
          for (std::size_t kw = 0; kw < KW; ++kw)
            for (std::size_t c = c0; c < c1; ++c) add(c, kh, kw);
      }
    }
    // Tile ot's panel from ot taps_ mr_ on: [tap][rows of its kernel].
    packed_weights_ = AlignedBuffer(blocks_.oc_tiles_total * taps_ * mr_);
    for (std::size_t ot = 0; ot < blocks_.oc_tiles_total; ++ot) {
      const std::size_t rows = tile_rows(ot);
      for (std::size_t u = 0; u < taps_; ++u)
        for (std::size_t i = 0; i < rows; ++i) {
          const std::size_t oc = ot * mr_ + i;
          packed_weights_[ot * taps_ * mr_ + u * rows + i] =
              oc < s_.out_channels ? weights[oc * taps_ + tap_weight[u]] : 0.0f;
        }
    }
    // Per thread: an edge tile (mr x nr), computed aside.
    per_thread_ = (mr_ * nr_ + 15) / 16 * 16;
    scratch_ = AlignedBuffer(per_thread_ * static_cast<std::size_t>(threads_));
  }

  /// output = conv2d(input, weights): NCHW fp32 in and out, sized as the shape says.
  void operator()(const float* input, float* output) {
    omp_set_schedule(p_.schedule, 0);
#pragma omp parallel num_threads(threads_)
    {
      const auto rows = static_cast<std::ptrdiff_t>(s_.batch * s_.in_channels * s_.height);
#pragma omp for schedule(static)
      for (std::ptrdiff_t u = 0; u < rows; ++u) copy_row(input, static_cast<std::size_t>(u));
      // The copy is complete after the barrier that ends the loop.
      float* tile = scratch_.data() + per_thread_ * static_cast<std::size_t>(omp_get_thread_num());
      detail::conv2d_for_each_block(p_.parallel, s_.batch, blocks_.oc_blocks, oh_blocks_, blocks_.ow_blocks,
                                    [&](std::size_t n, std::size_t cb, std::size_t rb, std::size_t pb) {
                                      block(output, tile, n, cb, rb, pb);
                                    });
    }
  }

 private:
  // Input row u = (n IC + c) H + ih into its padded row of the copy, split into phases.
  void copy_row(const float* input, std::size_t u) {
    const std::size_t W = s_.width, sw = s_.stride_w, pw = s_.pad_w;
    const std::size_t ih = u % s_.height, nc = u / s_.height;
    const float* src = input + u * W;
    float* d = copy_.data() + nc * plane_ + (ih + s_.pad_h) * row_stride_;
    std::size_t x = 0;
    if (sw == 1) {
      std::memcpy(d + pw, src, W * sizeof(float));
      return;
    }
    if (sw == 2) {
      // Columns x, x + 2, ... (padded x + pw, ...) to the phase (x + pw) % 2 from index
      // (x + pw) / 2 on, columns x + 1, x + 3, ... to the other phase from (x + 1 + pw) / 2 on.
      constexpr auto v = static_cast<std::size_t>(simd_width);
      float* first = d + pw % 2 * phase_ + pw / 2;
      float* second = d + (pw + 1) % 2 * phase_ + (pw + 1) / 2;
      for (; x + 2 * v <= W; x += 2 * v) {
        const vfloat lo = load(src + x), hi = load(src + x + v);
        store(first + x / 2, detail::alternate_lanes<0>(lo, hi, std::make_index_sequence<simd_width>()));
        store(second + x / 2, detail::alternate_lanes<1>(lo, hi, std::make_index_sequence<simd_width>()));
      }
    }
    for (; x < W; ++x) {
      const std::size_t j = x + pw;
      d[j % sw * phase_ + j / sw] = src[x];
    }
  }

  // One block: output-channel block cb, row block rb and position block pb of image n, over all
  // taps in chunks of ic_block channels, straight into the NCHW output.
  void block(float* output, float* tile, std::size_t n, std::size_t cb, std::size_t rb, std::size_t pb) const {
    const std::size_t IC = s_.in_channels, OC = s_.out_channels, OH = oh_, OW = ow_;
    const std::size_t kernel_taps = s_.kernel_h * s_.kernel_w;
    const std::size_t ot0 = cb * blocks_.oc_tiles, ots = std::min(blocks_.oc_tiles, blocks_.oc_tiles_total - ot0);
    const std::size_t pt0 = pb * blocks_.ow_tiles, pts = std::min(blocks_.ow_tiles, blocks_.ow_tiles_total - pt0);
    const std::size_t r0 = rb * oh_block_, rows = std::min(oh_block_, OH - r0);
    const std::size_t chunks = (IC + blocks_.ic_block - 1) / blocks_.ic_block;
    const float* image = copy_.data() + n * image_;
    auto compute = [&](std::size_t j, std::size_t ot, std::size_t oh, std::size_t pt) {
      const std::size_t oc0 = ot * mr_, channels = std::min(mr_, OC - oc0), rows_of_tile = tile_rows(ot);
      const std::size_t p0 = pt * nr_, cols = std::min(nr_, OW - p0);
      // The chunk's taps but those of the kernel rows in the padding above and below output row
      // oh (padding_rows_; none but with kh_kw_ic, whose taps go kh, kw, channel in a chunk).
      const std::size_t chunk_channels = std::min(blocks_.ic_block, IC - j * blocks_.ic_block);
      const std::size_t row_taps = s_.kernel_w * chunk_channels;
      const auto [above, below] = padding_rows_[oh];
      const std::size_t tap0 = j * blocks_.ic_block * kernel_taps + above * row_taps;
      const std::size_t depth = chunk_channels * kernel_taps - (above + below) * row_taps;
      const float* a = packed_weights_.data() + ot * taps_ * mr_ + tap0 * rows_of_tile;
      const float* b = image + oh * s_.stride_h * row_stride_ + p0;
      const bool accumulate = j > 0;
      const std::size_t vectors = (cols + simd_width - 1) / simd_width;
      const detail::Conv2dRowsKernel kernel = (rows_of_tile == mr_ ? kernels_ : edge_kernels_)[vectors - 1];
      float* c = output + ((n * OC + oc0) * OH + oh) * OW + p0;
      if (channels == rows_of_tile && cols == vectors * simd_width) {  // whole: straight into the output
        kernel(depth, a, b, offset_.data() + tap0, c, OH * OW, accumulate);
        return;
      }
      // An edge tile (a partial vector, or fewer channels than its kernel's rows): computed aside,
      // its valid part then added to (or written into) the output.
      kernel(depth, a, b, offset_.data() + tap0, tile, nr_, false);
      for (std::size_t i = 0; i < channels; ++i) {
        float* ci = c + i * OH * OW;
        const float* ti = tile + i * nr_;
        for (std::size_t q = 0; q < cols; ++q) ci[q] = accumulate ? ci[q] + ti[q] : ti[q];
      }
    };
    detail::conv2d_for_each_tile(p_.loop_order, chunks, ots, rows, pts,
                                 [&](std::size_t j, std::size_t k, std::size_t r, std::size_t t) {
                                   compute(j, ot0 + k, r0 + r, pt0 + t);
                                 });
  }

  // The rows of tile ot's kernel (and of its packed weights): edge_mr_ for the last tile.
  std::size_t tile_rows(std::size_t ot) const { return ot + 1 == blocks_.oc_tiles_total ? edge_mr_ : mr_; }

  std::array<detail::Conv2dRowsKernel, conv2d_max_oc_vectors> kernels_{}, edge_kernels_{};
  std::size_t edge_mr_ = 0;
  std::vector<std::array<std::size_t, 2>> padding_rows_;  // per output row (conv2d_padding_rows)
  std::size_t oh_ = 0, ow_ = 0, mr_ = 0, nr_ = 0, oh_block_ = 0, oh_blocks_ = 0;
  std::size_t phase_ = 0, row_stride_ = 0, plane_ = 0, image_ = 0, taps_ = 0, per_thread_ = 0;
  detail::Conv2dBlocks blocks_;
  std::vector<std::int32_t> offset_;  // of each tap's input vector from the row's first, in packed order
  AlignedBuffer copy_, packed_weights_, scratch_;
};

}  // namespace tunekit::cpu
