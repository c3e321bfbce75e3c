#pragma once
/// \file
/// What the conv2d plans (conv2d/direct.hpp, conv2d/gemm1x1.hpp, conv2d/gemm_rows.hpp) organise their work with:
/// the shape, configuration and thread count they hold (Conv2dPlanBase), the blocks of work
/// (Conv2dBlocks), the loops that share the blocks among the OpenMP threads
/// (conv2d_for_each_block) and that walk the tiles of a block in the configured order
/// (conv2d_for_each_tile), and the 32-bit limit of the offset tables.

#include "tunekit/kernels/cpu/conv2d/shape.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

namespace tunekit::cpu::detail {

/// The shape, configuration and thread count of a plan, checked on construction: throws
/// std::invalid_argument for a bad shape, bad parameters or fewer than one thread.
class Conv2dPlanBase {
 public:
  const Conv2dShape& shape() const noexcept { return s_; }
  const Conv2dParams& params() const noexcept { return p_; }
  int threads() const noexcept { return threads_; }

 protected:
  Conv2dPlanBase(const Conv2dShape& shape, const Conv2dParams& params, int threads)
      : s_(shape), p_(params), threads_(threads) {
    s_.validate();
    p_.validate();
    if (threads < 1) throw std::invalid_argument("Conv2dPlan: threads must be at least 1");
  }

  Conv2dShape s_;
  Conv2dParams p_;
  int threads_;
};

/// Per output row, the kernel rows that fall wholly into the top and into the bottom padding,
/// {above, below} (above + below <= kernel_h: all of them for a row that reads only padding). In
/// the kh_kw_ic order a chunk's taps go kernel row by kernel row, so those rows' taps are a run at
/// the chunk's start and one at its end, which the plans leave out. With `leave_out` false (a plan
/// that cannot leave them out) every row is {0, 0}.
inline std::vector<std::array<std::size_t, 2>> conv2d_padding_rows(const Conv2dShape& s, bool leave_out) {
  std::vector<std::array<std::size_t, 2>> rows(s.out_height(), {0, 0});
  if (!leave_out) return rows;
  for (std::size_t oh = 0; oh < rows.size(); ++oh) {
    const std::size_t top = oh * s.stride_h;  // the first kernel row's row in padded coordinates
    const std::size_t above = s.pad_h > top ? std::min(s.kernel_h, s.pad_h - top) : 0;
    const std::size_t end = top + s.kernel_h, bottom = s.pad_h + s.height;
    const std::size_t below = end > bottom ? std::min(s.kernel_h - above, end - bottom) : 0;
    rows[oh] = {above, below};
  }
  return rows;
}

/// The blocks of work of a plan. The output channels are cut into tiles of `tile_channels`, a
/// row of `row_positions` output positions into tiles of `tile_positions`; a block holds
/// `oc_tiles` x `ow_tiles` tiles and the reduction runs in chunks of `ic_block` input channels
/// (the configuration's values, at most what the shape has).
struct Conv2dBlocks {
  std::size_t oc_tiles_total = 0, ow_tiles_total = 0;  ///< tiles of output channels, of a row
  std::size_t oc_tiles = 0, ow_tiles = 0;              ///< tiles per block
  std::size_t ic_block = 0;                            ///< input channels per chunk
  std::size_t oc_blocks = 0, ow_blocks = 0;            ///< blocks of output channels, of a row

  Conv2dBlocks() = default;
  Conv2dBlocks(const Conv2dShape& s, const Conv2dParams& p, std::size_t tile_channels, std::size_t row_positions,
               std::size_t tile_positions)
      : oc_tiles_total((s.out_channels + tile_channels - 1) / tile_channels),
        ow_tiles_total((row_positions + tile_positions - 1) / tile_positions),
        oc_tiles(std::min<std::size_t>(static_cast<std::size_t>(p.oc_tiles), oc_tiles_total)),
        ow_tiles(std::min<std::size_t>(static_cast<std::size_t>(p.ow_tiles), ow_tiles_total)),
        ic_block(std::min<std::size_t>(static_cast<std::size_t>(p.ic_block), s.in_channels)),
        oc_blocks((oc_tiles_total + oc_tiles - 1) / oc_tiles),
        ow_blocks((ow_tiles_total + ow_tiles - 1) / ow_tiles) {}
};

/// Shares the blocks of one run among the threads of the enclosing OpenMP parallel region (an
/// orphaned `omp for` with the runtime schedule: every thread of the region calls it) and calls
/// f(n, oc_block, row_block, inner_block) for each. The images are always shared, with the
/// output-channel blocks (`parallel` oc), the row blocks (oh), or both collapsed, channels outer
/// (oc_oh) or rows outer (oh_oc). The other loops run inside each shared iteration: with oc the
/// row blocks and within them the `inner` blocks; with oh the inner blocks and within them the
/// channel blocks; with both, the inner blocks.
template <class F>
void conv2d_for_each_block(Conv2dParallel parallel, std::size_t batch, std::size_t oc_blocks,
                           std::size_t row_blocks, std::size_t inner_blocks, F&& f) {
  switch (parallel) {
    case Conv2dParallel::oc: {
      const auto items = static_cast<std::ptrdiff_t>(batch * oc_blocks);
#pragma omp for schedule(runtime)
      for (std::ptrdiff_t i = 0; i < items; ++i) {
        const auto u = static_cast<std::size_t>(i);
        for (std::size_t rb = 0; rb < row_blocks; ++rb)
          for (std::size_t ib = 0; ib < inner_blocks; ++ib) f(u / oc_blocks, u % oc_blocks, rb, ib);
      }
      break;
    }
    case Conv2dParallel::oh: {
      const auto items = static_cast<std::ptrdiff_t>(batch * row_blocks);
#pragma omp for schedule(runtime)
      for (std::ptrdiff_t i = 0; i < items; ++i) {
        const auto u = static_cast<std::size_t>(i);
        for (std::size_t ib = 0; ib < inner_blocks; ++ib)
          for (std::size_t cb = 0; cb < oc_blocks; ++cb) f(u / row_blocks, cb, u % row_blocks, ib);
      }
      break;
    }
    case Conv2dParallel::oc_oh: {
      const auto items = static_cast<std::ptrdiff_t>(batch * oc_blocks * row_blocks);
#pragma omp for schedule(runtime)
      for (std::ptrdiff_t i = 0; i < items; ++i) {
        const auto u = static_cast<std::size_t>(i);
        const std::size_t n = u / (oc_blocks * row_blocks), r = u % (oc_blocks * row_blocks);
        for (std::size_t ib = 0; ib < inner_blocks; ++ib) f(n, r / row_blocks, r % row_blocks, ib);
      }
      break;
    }
    case Conv2dParallel::oh_oc: {
      const auto items = static_cast<std::ptrdiff_t>(batch * row_blocks * oc_blocks);
#pragma omp for schedule(runtime)
      for (std::ptrdiff_t i = 0; i < items; ++i) {
        const auto u = static_cast<std::size_t>(i);
        const std::size_t n = u / (oc_blocks * row_blocks), r = u % (oc_blocks * row_blocks);
        for (std::size_t ib = 0; ib < inner_blocks; ++ib) f(n, r % oc_blocks, r / oc_blocks, ib);
      }
      break;
    }
  }
}

/// Walks the tiles of one block in the configured loop order, calling f(chunk, oc_tile, row,
/// position_tile) with indices from 0: over `chunks` chunks of input channels (ic), `oc_tiles`
/// output-channel tiles (oc) and `rows` rows of `position_tiles` tiles of positions (ow).
template <class F>
void conv2d_for_each_tile(Conv2dLoopOrder order, std::size_t chunks, std::size_t oc_tiles, std::size_t rows,
                          std::size_t position_tiles, F&& f) {
  switch (order) {
    case Conv2dLoopOrder::ic_oc_ow:
      for (std::size_t j = 0; j < chunks; ++j)
        for (std::size_t k = 0; k < oc_tiles; ++k)
          for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t t = 0; t < position_tiles; ++t) f(j, k, r, t);
      break;
    case Conv2dLoopOrder::ic_ow_oc:
      for (std::size_t j = 0; j < chunks; ++j)
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t t = 0; t < position_tiles; ++t)
            for (std::size_t k = 0; k < oc_tiles; ++k) f(j, k, r, t);
      break;
    case Conv2dLoopOrder::oc_ic_ow:
      for (std::size_t k = 0; k < oc_tiles; ++k)
        for (std::size_t j = 0; j < chunks; ++j)
          for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t t = 0; t < position_tiles; ++t) f(j, k, r, t);
      break;
  }
}

/// Throws std::invalid_argument when offsets up to n do not fit the 32-bit offset tables.
inline void conv2d_check_offset(std::size_t n) {
  if (n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument("Conv2dPlan: input too large for 32-bit tap offsets");
}

/// The pixel that output position p of an image (its positions in order, row by row) reads with
/// a 1x1 kernel without padding: its offset in an input plane, as a 32-bit offset table holds it.
inline std::int32_t conv2d_pixel_of(const Conv2dShape& s, std::size_t p) {
  const std::size_t ow = s.out_width();
  return static_cast<std::int32_t>(p / ow * s.stride_h * s.width + p % ow * s.stride_w);
}

}  // namespace tunekit::cpu::detail
