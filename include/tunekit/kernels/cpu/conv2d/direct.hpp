#pragma once
/// \file
/// The direct plan of the conv2d (layouts nchw and nchwc), the algorithm of oneDNN's and TVM's
/// x86 schedules: every output element is a sum over `taps` = in_channels x kernel_h x kernel_w
/// products. A register-blocked inner kernel (conv2d/tile.hpp) computes a tile of `ow_tile`
/// output positions of one row times `oc_vectors` vectors of output channels (vectorised with
/// tunekit::cpu::vfloat over output channels); each tap is `oc_vectors` vector loads of packed
/// weights, `ow_tile` broadcast input values and ow_tile x oc_vectors fused multiply-adds on
/// accumulators held in registers. The taps of the inner kernel are read through an offset
/// table, so one instantiation per tile shape (see `conv2d_tile_widths`) serves every layout,
/// reduction order and stride.
///
/// Around the inner kernel: the output channels are split into blocks of `oc_tiles` tiles, the
/// output rows into blocks of `oh_block` rows, each row into blocks of `ow_tiles` tiles (the
/// last tile of a row, when ow_tile does not divide the row, computes only the positions left,
/// with the inner kernel of that width; for a 1x1 kernel without padding in the nchwc layout,
/// whose packed copy holds the positions contiguously, the positions of a block of rows are
/// tiled as one row, a tile running on from the end of one row into the next), and the
/// reduction into chunks of `ic_block` input channels (in the kh_kw_ic order, the taps of the
/// kernel rows that fall in the top or bottom padding of an output row are left out, as oneDNN's
/// kernels leave them out: zeros multiplied); partial sums of a block stay in a
/// per-thread accumulator in a channel-blocked (NCHW[oc]c) layout, written to the NCHW output
/// when the block is complete. The loop order inside a block, the loops shared among the OpenMP
/// threads and their schedule are knobs.
///
/// Layouts: `nchw` reads the input in place (tiles that touch the padding or the right edge read
/// a zero-padded copy of their window instead); `nchwc` packs the input into a zero-padded,
/// channel-blocked NCHW[in_cblock]c copy first (in_cblock 1: a zero-padded NCHW copy; for a
/// strided 1x1 kernel without padding, only the pixels it reads), either shared among the threads
/// or one copy per thread (for a strided 1x1 kernel without padding, a copy per thread is not
/// made before the blocks: the first output-channel tile to reach a position tile gathers that
/// tile's pixels from the NCHW input as it computes, detail::conv2d_tile_gather, and the others
/// read them from the copy, so the strided reads overlap the multiply-adds; see gathers()).
/// Weights are always packed into [oc tile][tap][oc_vectors x simd_width]
/// panels when a configuration is prepared (inference with pre-packed weights); input packing,
/// when chosen, and the write of the accumulators into the NCHW output are part of every run.

#include "tunekit/kernels/cpu/buffer.hpp"
#include "tunekit/kernels/cpu/conv2d/blocking.hpp"
#include "tunekit/kernels/cpu/conv2d/shape.hpp"
#include "tunekit/kernels/cpu/conv2d/shuffle.hpp"
#include "tunekit/kernels/cpu/conv2d/tile.hpp"
#include "tunekit/kernels/cpu/simd.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tunekit::cpu {
namespace detail {

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

}  // namespace detail

/// The direct convolution (layouts nchw and nchwc) of a configuration made ready to run on one
/// shape: weights packed, offset tables computed, packed-input and per-thread buffers allocated.
/// Calling it computes the convolution of an NCHW input into an NCHW output; it allocates
/// nothing.
class Conv2dDirectPlan : public detail::Conv2dPlanBase {
 public:
  /// Packs `weights` (OIHW) for the configuration. Throws std::invalid_argument for bad
  /// parameters (or the gemm1x1 layout) or a shape whose offsets do not fit 32 bits,
  /// std::bad_alloc when out of memory.
  Conv2dDirectPlan(const Conv2dShape& shape, const Conv2dParams& params, const float* weights, int threads)
      : Conv2dPlanBase(shape, params, threads) {
    if (p_.layout != Conv2dLayout::nchw && p_.layout != Conv2dLayout::nchwc)
      throw std::invalid_argument(
          "Conv2dDirectPlan: the gemm1x1 and gemm_rows layouts have plans of their own (Conv2dGemm1x1Plan, "
          "Conv2dGemmRowsPlan)");
    tile_ = detail::find_conv2d_tile(p_.ow_tile, p_.oc_vectors);
    if (!tile_) throw std::invalid_argument("Conv2dPlan: no inner kernel for this tile");

    oh_ = s_.out_height();
    ow_ = s_.out_width();
    ocw_ = static_cast<std::size_t>(p_.oc_vectors * simd_width);
    P_ = static_cast<std::size_t>(p_.ow_tile);
    oh_block_ = std::min<std::size_t>(static_cast<std::size_t>(p_.oh_block), oh_);
    oh_blocks_ = (oh_ + oh_block_ - 1) / oh_block_;
    span_ = (P_ - 1) * s_.stride_w + s_.kernel_w;
    cb_ = static_cast<std::size_t>(p_.in_cblock);
    nchwc_ = p_.layout == Conv2dLayout::nchwc;
    // A 1x1 kernel without padding over the packed copy: the copy holds each channel block's
    // output positions contiguously (a strided kernel's copy only the pixels it reads), so the
    // tiles run over the positions of a block of rows taken as one row, across the ends of its
    // rows (flat_): a block of 2 rows of 14 is 7 tiles of 4, not 2 x (3 tiles of 4 and one of
    // 2).
    flat_ = nchwc_ && s_.kernel_h == 1 && s_.kernel_w == 1 && s_.pad_h == 0 && s_.pad_w == 0;
    if (flat_) {
      // A block of work then holds oh_block x ow_tiles tiles of the block of rows' positions: as
      // many as a block of oh_block rows of ow_tiles tiles each holds otherwise.
      Conv2dParams flat = p_;
      flat.ow_tiles = p_.ow_tiles * static_cast<int>(oh_block_);
      blocks_ = detail::Conv2dBlocks(s_, flat, ocw_, oh_block_ * ow_, P_);
    } else {
      blocks_ = detail::Conv2dBlocks(s_, p_, ocw_, ow_, P_);
    }
    // The last tile of a row (flat_: of a block of rows) computes only the positions left with
    // the inner kernel of that width, where one is instantiated, instead of a whole tile.
    narrow_.assign(P_, tile_);
    for (std::size_t left = 1; left < P_; ++left)
      if (const auto narrow = detail::find_conv2d_tile(static_cast<int>(left), p_.oc_vectors)) narrow_[left] = narrow;
    const std::size_t left = ow_ - (blocks_.ow_tiles_total - 1) * P_;
    last_tile_ = left < P_ ? narrow_[left] : tile_;

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
      // flat_: rows of exactly the output width, and after the last one the tile's width of
      // zeros (a whole tile at the end may read them).
      wp_ = flat_ ? ow_
                  : std::max(subsampled_ ? ow_ : s_.width + 2 * s_.pad_w,
                             (blocks_.ow_tiles_total * P_ - 1) * packed_stride_w_ + s_.kernel_w);
      cstride_ = hp_ * wp_ + (flat_ ? P_ : 0);
      packed_size_ = (s_.batch * cblocks_ * cstride_ * cb_ + 15) / 16 * 16;
      detail::conv2d_check_offset(packed_size_);
      per_thread_copy_ = p_.packing == Conv2dPacking::per_thread;
      // A strided 1x1 kernel with a copy per thread: each position tile's first output-channel
      // tile gathers the tile's input from the NCHW input as it computes (gather_tile_), into a
      // copy of [image][chunk][tile][tap][position] (each tile P positions, rb_tiles_ tiles per
      // block of rows), instead of a copy loop before the blocks.
      if (flat_ && subsampled_ && per_thread_copy_)
        gather_tile_ = detail::find_conv2d_gather_tile(p_.ow_tile, p_.oc_vectors);
      if (gather_tile_) {
        rb_tiles_ = (oh_block_ * ow_ + P_ - 1) / P_;
        packed_size_ = (s_.batch * s_.in_channels * oh_blocks_ * rb_tiles_ * P_ + 15) / 16 * 16;
        detail::conv2d_check_offset(s_.input_size());
      }
      packed_input_ = AlignedBuffer(packed_size_ * (per_thread_copy_ ? static_cast<std::size_t>(threads_) : 1));
      std::fill(packed_input_.data(), packed_input_.data() + packed_input_.size(), 0.0f);
    } else {
      detail::conv2d_check_offset(s_.input_size());
    }
    build_taps();
    pack_weights(weights);
    if (gather_tile_) {
      // Per padded position of a block of rows: its pixel in a plane (0 past the block's last
      // position, whose accumulators are not written out); per tap: its channel's plane; per tap
      // of a chunk: its row of a tile's copy.
      const std::size_t padded = rb_tiles_ * P_;
      gather_pixel_.assign(oh_blocks_ * padded, 0);
      for (std::size_t hb = 0; hb < oh_blocks_; ++hb)
        for (std::size_t q = 0; q < flat_positions(hb * oh_block_); ++q)
          gather_pixel_[hb * padded + q] = detail::conv2d_pixel_of(s_, hb * oh_block_ * ow_ + q);
      gather_plane_.resize(taps_.size());
      for (std::size_t t = 0; t < taps_.size(); ++t)
        gather_plane_[t] = static_cast<std::int32_t>(taps_[t][0] * s_.height * s_.width);
      copy_offset_.resize(blocks_.ic_block);
      for (std::size_t t = 0; t < copy_offset_.size(); ++t) copy_offset_[t] = static_cast<std::int32_t>(t * P_);
      filled_size_ = s_.batch * (chunk_begin_.size() - 1) * oh_blocks_ * rb_tiles_;
      filled_.assign(filled_size_ * static_cast<std::size_t>(threads_), 0);
    }

    acc_size_ = blocks_.oc_tiles * (flat_ ? 1 : oh_block_) * blocks_.ow_tiles * P_ * ocw_;
    window_size_ = nchwc_ ? 0 : blocks_.ic_block * s_.kernel_h * span_;
    per_thread_ = (acc_size_ + window_size_ + 15) / 16 * 16;
    scratch_ = AlignedBuffer(per_thread_ * static_cast<std::size_t>(threads_));
    row_interior_.resize(oh_);
    for (std::size_t oh = 0; oh < oh_; ++oh)
      row_interior_[oh] = oh * s_.stride_h >= s_.pad_h &&
                          oh * s_.stride_h - s_.pad_h + s_.kernel_h <= s_.height;
    // With kh_kw_ic the kernel rows in the top or bottom padding are left out.
    padding_rows_ = detail::conv2d_padding_rows(s_, !flat_ && p_.reduction == Conv2dReduction::kh_kw_ic);
    tile_interior_.resize(blocks_.ow_tiles_total);
    for (std::size_t t = 0; t < blocks_.ow_tiles_total; ++t) {
      const std::size_t iw = t * P_ * s_.stride_w;
      tile_interior_[t] = iw >= s_.pad_w && iw - s_.pad_w + span_ <= s_.width;
    }
  }

  /// Whether each position tile's input is gathered by its first output-channel tile as it
  /// computes (detail::conv2d_tile_gather: the nchwc layout, packing per_thread, a strided 1x1
  /// kernel without padding, a tile of at most conv2d_tile_position_registers positions) rather
  /// than copied before the blocks.
  bool gathers() const noexcept { return gather_tile_ != nullptr; }

  /// output = conv2d(input, weights): NCHW fp32 in and out, sized as the shape says.
  void operator()(const float* input, float* output) {
    omp_set_schedule(p_.schedule, 0);
#pragma omp parallel num_threads(threads_)
    {
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      Scratch sc{scratch_.data() + per_thread_ * thread};
      sc.window = sc.acc + acc_size_;
      const float* in = input;
      if (nchwc_ && per_thread_copy_) {
        float* copy = packed_input_.data() + thread * packed_size_;
        if (gather_tile_) {  // filled by the tiles as they go
          sc.input = input;
          sc.copy = copy;
          sc.filled = filled_.data() + thread * filled_size_;
          std::fill(sc.filled, sc.filled + filled_size_, 0);
        } else {
          for (std::size_t row = 0; row < s_.batch * cblocks_ * packed_rows_; ++row) pack_row(input, copy, row);
        }
        in = copy;
      } else if (nchwc_) {
        const auto rows = static_cast<std::ptrdiff_t>(s_.batch * cblocks_ * packed_rows_);
#pragma omp for schedule(static)
        for (std::ptrdiff_t row = 0; row < rows; ++row)
          pack_row(input, packed_input_.data(), static_cast<std::size_t>(row));
        in = packed_input_.data();  // complete after the barrier that ends the loop
      }
      detail::conv2d_for_each_block(p_.parallel, s_.batch, blocks_.oc_blocks, oh_blocks_, blocks_.ow_blocks,
                                    [&](std::size_t n, std::size_t cb, std::size_t hb, std::size_t wb) {
                                      block(sc, in, output, n, cb, hb, wb);
                                    });
    }
  }

 private:
  struct Scratch {
    float* acc;
    float* window = nullptr;
    // gather_tile_: the NCHW input, the thread's copy, and which of its tiles are filled.
    const float* input = nullptr;
    float* copy = nullptr;
    char* filled = nullptr;
    // The window in `window`: batch, chunk, row and tile it holds (none at first).
    std::size_t key[4] = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  };

  // The taps in reduction order, chunk by chunk: their input offsets in the input (nchw: in
  // place; nchwc: the packed copy), in a window copy (nchw), and their channel, row, column.
  void build_taps() {
    const std::size_t IC = s_.in_channels, KH = s_.kernel_h, KW = s_.kernel_w;
    const std::size_t chunks = (IC + blocks_.ic_block - 1) / blocks_.ic_block;
    chunk_begin_.assign(chunks + 1, 0);
    std::vector<std::array<std::size_t, 3>> taps;  // (channel, row, column)
    taps.reserve(s_.taps());
    for (std::size_t j = 0; j < chunks; ++j) {
      chunk_begin_[j] = taps.size();
      const std::size_t c0 = j * blocks_.ic_block, c1 = std::min(IC, c0 + blocks_.ic_block);
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
        o = ((c / cb_) * cstride_ + r * wp_ + k) * cb_ + c % cb_;
      else
        o = (c * s_.height + r) * s_.width + k;
      offset_[t] = static_cast<std::int32_t>(o);
      window_offset_[t] = static_cast<std::int32_t>(((c % blocks_.ic_block) * KH + r) * span_ + k);
    }
  }

  // Weights OIHW -> [oc tile][tap in reduction order][OCW], zero past the last output channel.
  void pack_weights(const float* weights) {
    const std::size_t taps = taps_.size(), OC = s_.out_channels;
    packed_weights_ = AlignedBuffer(blocks_.oc_tiles_total * taps * ocw_);
    for (std::size_t ot = 0; ot < blocks_.oc_tiles_total; ++ot)
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
    constexpr auto V = static_cast<std::size_t>(simd_width);
    const std::size_t H = s_.height, W = s_.width, IC = s_.in_channels, cb = cb_;
    const std::size_t blk = u % cblocks_, row = (u / cblocks_) % packed_rows_, n = u / (packed_rows_ * cblocks_);
    const std::size_t ih = subsampled_ ? row * s_.stride_h : row;
    float* d = packed + ((n * cblocks_ + blk) * cstride_ + (row + (subsampled_ ? 0 : s_.pad_h)) * wp_ +
                         (subsampled_ ? 0 : s_.pad_w)) * cb;
    const std::size_t c0 = blk * cb, cn = std::min(cb, IC - c0);
    const float* src = input + ((n * IC + c0) * H + ih) * W;
    if (subsampled_) {
      const std::size_t sw = s_.stride_w;
      if (sw != 2) {
        for (std::size_t c = 0; c < cn; ++c)
          for (std::size_t x = 0; x < ow_; ++x) d[x * cb + c] = src[c * H * W + x * sw];
        return;
      }
      // Columns x0 to x0 + cols - 1 of channel c's row: the even lanes of two vectors of the input
      // row, near the row's end from partial loads of what is left of it.
      auto even = [&](std::size_t c, std::size_t x0) {
        const float* p = src + c * H * W + 2 * x0;
        const std::size_t left = W - 2 * x0;  // input columns left
        const vfloat lo = left >= V ? load(p) : load_first(p, left);
        const vfloat hi = left >= 2 * V ? load(p + V) : left > V ? load_first(p + V, left - V) : vfloat{};
        return detail::alternate_lanes<0>(lo, hi, std::make_index_sequence<simd_width>());
      };
      if (cb == 1) {
        for (std::size_t x0 = 0; x0 < ow_; x0 += V) {
          const vfloat v = even(0, x0);
          if (x0 + V <= ow_)
            store(d + x0, v);
          else
            store_first(d + x0, v, ow_ - x0);
        }
      } else {
        pack_transposed(d, ow_, cn, [&](std::size_t c, std::size_t x0, std::size_t) { return even(c, x0); });
      }
      return;
    }
    if (cb == 1) {
      std::copy(src, src + W, d);
      return;
    }
    // Each vector loaded from the channel's row; the last, narrower one a partial load.
    pack_transposed(d, W, cn, [&](std::size_t c, std::size_t x0, std::size_t cols) {
      const float* p = src + c * H * W + x0;
      return cols == V ? load(p) : load_first(p, cols);
    });
  }

  // Columns [0, width) of one row of the NCHW[cb]c copy at d, in blocks of simd_width channels x
  // simd_width columns: read(c, x0, cols) gives channel c's columns x0 to x0 + cols - 1 (cols <=
  // simd_width) as a vector for each of the first `channels` channels of the block (the others,
  // which the block lacks, are written as zeros), and each block is transposed and its columns
  // stored, cb floats each when cb is less than simd_width.
  template <class Read>
  void pack_transposed(float* d, std::size_t width, std::size_t channels, Read read) const {
    constexpr auto V = static_cast<std::size_t>(simd_width);
    for (std::size_t x0 = 0; x0 < width; x0 += V) {
      const std::size_t cols = std::min(V, width - x0);
      for (std::size_t g = 0; g < cb_; g += V) {
        vfloat v[simd_width];
        for (std::size_t c = 0; c < V; ++c) v[c] = g + c < channels ? read(g + c, x0, cols) : vfloat{};
        detail::transpose(v);
        float* o = d + x0 * cb_ + g;
        // cb_ is a power of 2, at least 2 here. Fewer floats than a vector go as one store of a
        // constant size (store_first would store them one by one without AVX-512).
        switch (std::min(V, cb_)) {
          case 2: for (std::size_t q = 0; q < cols; ++q) std::memcpy(o + q * cb_, &v[q], 2 * sizeof(float)); break;
          case 4: for (std::size_t q = 0; q < cols; ++q) std::memcpy(o + q * cb_, &v[q], 4 * sizeof(float)); break;
          case 8: for (std::size_t q = 0; q < cols; ++q) std::memcpy(o + q * cb_, &v[q], 8 * sizeof(float)); break;
          default: for (std::size_t q = 0; q < cols; ++q) store(o + q * cb_, v[q]); break;
        }
      }
    }
  }

  // Copies the input window of one tile (the channels of chunk j, kernel_h rows, span columns)
  // into the thread's window buffer, zero outside the image.
  void fill_window(Scratch& sc, const float* input, std::size_t n, std::size_t j, std::size_t oh,
                   std::size_t tile) {
    const std::size_t key[4] = {n, j, oh, tile};
    if (std::equal(key, key + 4, sc.key)) return;
    std::copy(key, key + 4, sc.key);
    const std::size_t H = s_.height, W = s_.width, KH = s_.kernel_h;
    const std::size_t c0 = j * blocks_.ic_block, c1 = std::min(s_.in_channels, c0 + blocks_.ic_block);
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

  // The output positions of the block of rows from oh (flat_: its positions taken as one row).
  std::size_t flat_positions(std::size_t oh) const { return std::min(oh_block_, oh_ - oh) * ow_; }

  // One inner-kernel call: chunk j of the taps, output-channel tile `ot`, output row `oh`,
  // position tile `tile`, into the accumulator tile `acc` (flat_: `oh` is the first row of a
  // block of rows, `tile` a tile of its positions).
  void tile(Scratch& sc, const float* in, std::size_t n, std::size_t j, std::size_t ot,
            std::size_t oh, std::size_t tile, float* acc) {
    const std::size_t t0 = chunk_begin_[j], taps = chunk_begin_[j + 1] - t0;
    const float* w = packed_weights_.data() + (ot * taps_.size() + t0) * ocw_;
    const std::size_t ow0 = tile * P_;
    if (flat_) {
      const std::size_t left = flat_positions(oh) - ow0;
      const detail::Conv2dTileFn kernel = left < P_ ? narrow_[left] : tile_;
      if (gather_tile_) {
        // Chunk j of this tile in the thread's copy ([tap][position], taps == channels): gathered
        // by the first output-channel tile that gets here, read from the copy by the others.
        const std::size_t tl = oh / oh_block_ * rb_tiles_ + tile, IC = s_.in_channels;
        float* copy = sc.copy + (n * IC + t0) * oh_blocks_ * rb_tiles_ * P_ + tl * P_ * taps;
        char& filled = sc.filled[(n * (chunk_begin_.size() - 1) + j) * oh_blocks_ * rb_tiles_ + tl];
        if (!filled) {
          filled = 1;
          gather_tile_(sc.input + n * IC * s_.height * s_.width, gather_pixel_.data() + tl * P_,
                       gather_plane_.data() + t0, copy, w, taps, acc, j > 0);
        } else {
          kernel(copy, copy_offset_.data(), w, taps, 1, acc, j > 0);
        }
        return;
      }
      const float* base = in + ((n * cblocks_) * cstride_ + oh * ow_ + ow0) * cb_;
      kernel(base, offset_.data() + t0, w, taps, static_cast<std::ptrdiff_t>(cb_), acc, j > 0);
      return;
    }
    const detail::Conv2dTileFn kernel = tile + 1 == blocks_.ow_tiles_total ? last_tile_ : tile_;
    // The taps of kernel rows in the padding multiply zeros: left out where they are a run
    // (padding_rows_), as oneDNN's kernels leave them out.
    const std::size_t row_taps = (chunk_begin_[j + 1] - t0) / s_.kernel_h;
    const std::size_t skip = padding_rows_[oh][0] * row_taps;
    const std::size_t kept = taps - skip - padding_rows_[oh][1] * row_taps;
    if (nchwc_) {
      const float* base = in + ((n * cblocks_) * cstride_ + oh * packed_stride_h_ * wp_ + ow0 * packed_stride_w_) * cb_;
      kernel(base, offset_.data() + t0 + skip, w + skip * ocw_, kept,
             static_cast<std::ptrdiff_t>(packed_stride_w_ * cb_), acc, j > 0);
    } else if (row_interior_[oh] && tile_interior_[tile]) {
      const float* base = in + (n * s_.in_channels * s_.height + oh * s_.stride_h - s_.pad_h) * s_.width +
                          ow0 * s_.stride_w - s_.pad_w;
      kernel(base, offset_.data() + t0, w, taps, static_cast<std::ptrdiff_t>(s_.stride_w), acc, j > 0);
    } else {
      fill_window(sc, in, n, j, oh, tile);
      kernel(sc.window, window_offset_.data() + t0 + skip, w + skip * ocw_, kept,
             static_cast<std::ptrdiff_t>(s_.stride_w), acc, j > 0);
    }
  }

  // One block of work: output-channel block cb, row block hb, position block wb of image n;
  // accumulated in the thread's accumulator, then written to the output.
  void block(Scratch& sc, const float* in, float* output, std::size_t n, std::size_t cb,
             std::size_t hb, std::size_t wb) {
    const std::size_t ot0 = cb * blocks_.oc_tiles, ots = std::min(blocks_.oc_tiles, blocks_.oc_tiles_total - ot0);
    const std::size_t oh0 = hb * oh_block_;
    // flat_: one row of the block's positions (the last block of rows may have fewer tiles).
    const std::size_t rows = flat_ ? 1 : std::min(oh_block_, oh_ - oh0);
    const std::size_t row_tiles = flat_ ? (flat_positions(oh0) + P_ - 1) / P_ : blocks_.ow_tiles_total;
    const std::size_t tl0 = wb * blocks_.ow_tiles;
    if (tl0 >= row_tiles) return;
    const std::size_t tls = std::min(blocks_.ow_tiles, row_tiles - tl0);
    const std::size_t chunks = chunk_begin_.size() - 1;
    const std::size_t tile_size = P_ * ocw_, row_size = blocks_.ow_tiles * tile_size;
    auto acc = [&](std::size_t k, std::size_t r, std::size_t t) {
      return sc.acc + (k * rows + r) * row_size + t * tile_size;
    };
    detail::conv2d_for_each_tile(p_.loop_order, chunks, ots, rows, tls,
                                 [&](std::size_t j, std::size_t k, std::size_t r, std::size_t t) {
                                   tile(sc, in, n, j, ot0 + k, oh0 + r, tl0 + t, acc(k, r, t));
                                 });
    // The accumulator to NCHW: only the valid channels and positions (flat_: one run of the
    // block's positions, contiguous in the output as in the copy).
    const std::size_t OC = s_.out_channels, ow0 = tl0 * P_;
    const std::size_t positions = std::min(tls * P_, (flat_ ? flat_positions(oh0) : ow_) - ow0);
    const std::size_t out_row = flat_ ? positions : ow_;
    for (std::size_t k = 0; k < ots; ++k) {
      const std::size_t oc0 = (ot0 + k) * ocw_, channels = std::min(ocw_, OC - oc0);
      float* out = output + ((n * OC + oc0) * oh_ + oh0) * ow_ + ow0;
      const float* a = acc(k, 0, 0);
      switch (p_.oc_vectors) {
        case 1: detail::conv2d_write_block<simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, out_row); break;
        case 2: detail::conv2d_write_block<2 * simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, out_row); break;
        case 3: detail::conv2d_write_block<3 * simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, out_row); break;
        default: detail::conv2d_write_block<4 * simd_width>(a, row_size, rows, channels, positions, out, oh_ * ow_, out_row); break;
      }
    }
  }

  detail::Conv2dTileFn tile_ = nullptr, last_tile_ = nullptr;  // the row's last tile: see the constructor
  std::vector<detail::Conv2dTileFn> narrow_;  // [k]: the inner kernel of k < ow_tile positions (tile_ if none)
  std::size_t oh_ = 0, ow_ = 0, ocw_ = 0, P_ = 0;
  detail::Conv2dBlocks blocks_;
  std::size_t oh_block_ = 0, oh_blocks_ = 0;  // output rows per block, blocks of rows
  // The packed copy: channel block, blocks, rows and columns (padding included), its size, the
  // input rows it holds per channel block, and the strides of the convolution over it.
  std::size_t span_ = 0, cb_ = 1, cblocks_ = 0, hp_ = 0, wp_ = 0, packed_size_ = 0, packed_rows_ = 0;
  std::size_t cstride_ = 0;  // floats / cb_ from one channel block of the copy to the next
  bool flat_ = false;        // tiles over the positions of a block of rows taken as one row
  std::size_t packed_stride_h_ = 1, packed_stride_w_ = 1;
  bool nchwc_ = false, per_thread_copy_ = false, subsampled_ = false;
  std::vector<std::size_t> chunk_begin_;
  std::vector<std::array<std::size_t, 3>> taps_;
  std::vector<std::int32_t> offset_, window_offset_;
  AlignedBuffer packed_weights_, packed_input_, scratch_;
  std::size_t acc_size_ = 0, window_size_ = 0, per_thread_ = 0;
  std::vector<char> row_interior_, tile_interior_;
  // Per output row: the kernel rows in the top and the bottom padding whose taps are left out
  // (kh_kw_ic only; 0 otherwise).
  std::vector<std::array<std::size_t, 2>> padding_rows_;
  // The gathering tiles (see the constructor): the kernel, position tiles per block of rows,
  // pixel and plane offsets, a tile copy's tap offsets, and per thread the tiles filled.
  detail::Conv2dGatherTileFn gather_tile_ = nullptr;
  std::size_t rb_tiles_ = 0, filled_size_ = 0;
  std::vector<std::int32_t> gather_pixel_, gather_plane_, copy_offset_;
  std::vector<char> filled_;
};

}  // namespace tunekit::cpu
