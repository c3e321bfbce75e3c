#pragma once
/// \file
/// A tunable OpenMP conv2d (NCHW fp32, any stride and padding, dilation 1) and the kernel that
/// tunes it.
///
/// A configuration (conv2d_space, conv2d_params) runs one of three algorithms, chosen by its
/// `layout` knob: the direct convolution, vectorised over output channels (layouts nchw and
/// nchwc, Conv2dDirectPlan in conv2d/direct.hpp); for a 1x1 kernel without padding, a GEMM over
/// the output positions (layout gemm1x1, Conv2dGemm1x1Plan in conv2d/gemm1x1.hpp); for any other
/// kernel, a GEMM over the taps per output row, vectorised over its positions (layout gemm_rows,
/// Conv2dGemmRowsPlan in conv2d/gemm_rows.hpp). Conv2dPlan sets up the one a configuration names;
/// Conv2dKernel tunes them together on one shape. What both share (the
/// shape, the parameters, the instantiated tiles, the reference, the blocks of work and the
/// loops over them) is in conv2d/shape.hpp, conv2d/tile.hpp, conv2d/shuffle.hpp and
/// conv2d/blocking.hpp.

#include "tunekit/concepts/kernel.hpp"
#include "tunekit/core/status.hpp"
#include "tunekit/kernels/cpu/buffer.hpp"
#include "tunekit/kernels/cpu/conv2d/direct.hpp"
#include "tunekit/kernels/cpu/conv2d/gemm1x1.hpp"
#include "tunekit/kernels/cpu/conv2d/gemm_rows.hpp"
#include "tunekit/kernels/cpu/conv2d/shape.hpp"
#include "tunekit/kernels/cpu/simd.hpp"
#include "tunekit/space/search_space.hpp"

#include <omp.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tunekit::cpu {

/// A configuration of the convolution made ready to run on one shape: the plan of its layout,
/// Conv2dDirectPlan (nchw, nchwc), Conv2dGemm1x1Plan (gemm1x1) or Conv2dGemmRowsPlan (gemm_rows). Calling it computes the
/// convolution of an NCHW input into an NCHW output; it allocates nothing.
class Conv2dPlan {
 public:
  /// Packs `weights` (OIHW) for the configuration. Throws std::invalid_argument for bad
  /// parameters or a shape whose offsets do not fit 32 bits, std::bad_alloc when out of memory.
  Conv2dPlan(const Conv2dShape& shape, const Conv2dParams& params, const float* weights, int threads)
      : plan_(make(shape, params, weights, threads)) {}

  const Conv2dShape& shape() const noexcept { return base().shape(); }
  const Conv2dParams& params() const noexcept { return base().params(); }
  int threads() const noexcept { return base().threads(); }

  /// output = conv2d(input, weights): NCHW fp32 in and out, sized as the shape says.
  void operator()(const float* input, float* output) {
    std::visit([&](auto& plan) { plan(input, output); }, plan_);
  }

 private:
  using Plan = std::variant<Conv2dDirectPlan, Conv2dGemm1x1Plan, Conv2dGemmRowsPlan>;

  static Plan make(const Conv2dShape& shape, const Conv2dParams& params, const float* weights, int threads) {
    if (params.layout == Conv2dLayout::gemm1x1) return Conv2dGemm1x1Plan(shape, params, weights, threads);
    if (params.layout == Conv2dLayout::gemm_rows) return Conv2dGemmRowsPlan(shape, params, weights, threads);
    return Conv2dDirectPlan(shape, params, weights, threads);
  }

  const detail::Conv2dPlanBase& base() const noexcept {
    return std::visit([](const auto& plan) -> const detail::Conv2dPlanBase& { return plan; }, plan_);
  }

  Plan plan_;
};

/// The values of the ow_tile knob: the widths of conv2d_tile_widths that are part of a tile that
/// fits the target's vector registers (a direct tile of that many positions or a gemm1x1 tile of
/// that many output channels, for some oc_vectors; see the register rule at vector_registers).
/// With 32 registers every width; with 16 (AVX2) the widths up to 14.
inline std::vector<std::int64_t> conv2d_tile_knob_values() {
  std::vector<std::int64_t> values;
  for (int w : conv2d_tile_widths)
    for (int v = 1; v <= conv2d_max_oc_vectors; ++v)
      if ((is_conv2d_tile(w, v) && conv2d_tile_registers(w, v) <= vector_registers) || is_conv2d_gemm_tile(w, v)) {
        values.push_back(w);
        break;
      }
  return values;
}

/// The search space of the convolution on one shape: layout, input channel block and packing, the
/// register tile (ow_tile output positions x oc_vectors vectors of output channels; transposed
/// for gemm1x1 and gemm_rows: ow_tile output channels x oc_vectors vectors of output positions), the blocks
/// of output channels, positions and rows, the input-channel chunk, the reduction order, the
/// loop order, the parallel loop and its schedule. The knobs' ranges follow the target (see the
/// register rule at vector_registers): ow_tile takes only widths of tiles that fit the vector
/// registers (conv2d_tile_knob_values), and oc_tiles and ow_tiles go up to
/// conv2d_max_block_tiles (8 with 32 registers, 16 with AVX2's 16, whose tiles are about half as
/// large). Constraints:
/// - the tile is instantiated and fits the target's vector registers (for gemm1x1 and gemm_rows:
///   is_conv2d_gemm_tile);
/// - gemm1x1 only for a 1x1 kernel without padding, gemm_rows for every other kernel;
/// - knobs a config leaves unused are inactive there (SearchSpace::add_inactive: they take one
///   value, and a move that makes them unused lands on it): in_cblock (1) in the layouts
///   other than nchwc, oh_block (1) in gemm1x1, packing (shared) where the input is read in
///   place (nchw, and gemm1x1 with stride 1) and in gemm_rows (its one copy is shared),
///   reduction (ic_kh_kw) for a 1x1 kernel (the two orders coincide);
/// - no block or tile is larger than needed: at most one value of in_cblock and of ic_block
///   covers all input channels and one of oh_block all output rows, blocks and tiles hold no
///   empty row or vector (gemm1x1: of the image's positions; gemm_rows: of a row's),
///   ow_tile <= out_width (direct layouts);
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
  s.add(Knob::categorical("layout", {"nchw", "nchwc", "gemm1x1", "gemm_rows"}));
  s.add(Knob::power_of_two("in_cblock", std::vector<std::int64_t>{1, 4, 8, 16}));
  s.add(Knob::categorical("packing", {"shared", "per_thread"}));
  s.add(Knob::range("oc_vectors", 1, conv2d_max_oc_vectors));
  s.add(Knob::ordinal("ow_tile", conv2d_tile_knob_values()));
  s.add(Knob::power_of_two("oc_tiles", 1, conv2d_max_block_tiles));
  s.add(Knob::power_of_two("ow_tiles", 1, conv2d_max_block_tiles));
  s.add(Knob::power_of_two("oh_block", 1, 8));
  s.add(Knob::power_of_two("ic_block", 4, 512));
  s.add(Knob::categorical("reduction", {"ic_kh_kw", "kh_kw_ic"}));
  s.add(Knob::categorical("loop_order", {"ic_oc_ow", "ic_ow_oc", "oc_ic_ow"}));
  s.add(Knob::categorical("parallel", {"oc", "oh", "oc_oh", "oh_oc"}));
  s.add(Knob::categorical("schedule", {"static", "dynamic"}));

  // Layout values: 0 nchw, 1 nchwc (the direct layouts), 2 gemm1x1, 3 gemm_rows (the GEMM layouts,
  // whose tile is transposed).
  const bool gemm_shape = shape.kernel_h == 1 && shape.kernel_w == 1 && shape.pad_h == 0 && shape.pad_w == 0;
  const bool unit_stride = shape.stride_h == 1 && shape.stride_w == 1;
  s.add_constraint("layout == gemm1x1 implies a 1x1 kernel without padding",
                   [gemm_shape](const ConfigView& c) { return c["layout"] != 2 || gemm_shape; });
  s.add_constraint("layout == gemm_rows implies not a 1x1 kernel without padding (gemm1x1 computes that GEMM, "
                   "its tiles running across rows)",
                   [gemm_shape](const ConfigView& c) { return c["layout"] != 3 || !gemm_shape; });
  // Knobs a config leaves unused take one value there (inactive: a move that makes them unused
  // lands on that value, SearchSpace::add_inactive).
  s.add_inactive("in_cblock", "1", "layout != nchwc (no NCHW[in_cblock]c copy)",
                 [](const ConfigView& c) { return c["layout"] != 1; });
  s.add_inactive("oh_block", "1", "layout == gemm1x1 (the positions taken as one row)",
                 [](const ConfigView& c) { return c["layout"] == 2; });
  s.add_inactive("packing", "shared",
                 "layout == nchw or (layout == gemm1x1 and stride 1) (the input read in place) or layout == "
                 "gemm_rows (one copy, shared)",
                 [unit_stride](const ConfigView& c) {
                   return c["layout"] == 0 || (c["layout"] == 2 && unit_stride) || c["layout"] == 3;
                 });
  const bool one_tap_kernel = shape.kernel_h * shape.kernel_w == 1;
  s.add_inactive("reduction", "ic_kh_kw", "kernel_h * kernel_w == 1 (the orders coincide)",
                 [one_tap_kernel](const ConfigView&) { return one_tap_kernel; });
  s.add_constraint("in_cblock < 2 * in_channels", [IC](const ConfigView& c) { return c["in_cblock"] < 2 * IC; });
  s.add_constraint("ic_block < 2 * in_channels", [IC](const ConfigView& c) { return c["ic_block"] < 2 * IC; });
  s.add_constraint("oh_block < 2 * out_height", [OH](const ConfigView& c) { return c["oh_block"] < 2 * OH; });
  // The direct layouts: tiles of ow_tile positions x oc_vectors vectors of channels.
  s.add_constraint("layout is nchw or nchwc implies ow_tile <= out_width",
                   [OW](const ConfigView& c) { return c["layout"] >= 2 || c["ow_tile"] <= OW; });
  s.add_constraint(
      "layout is nchw or nchwc implies ow_tile * oc_vectors + oc_vectors + 1 <= vector_registers (instantiated tile)",
      [](const ConfigView& c) {
        const auto p = static_cast<int>(c["ow_tile"]), v = static_cast<int>(c["oc_vectors"]);
        return c["layout"] >= 2 || (is_conv2d_tile(p, v) && conv2d_tile_registers(p, v) <= vector_registers);
      });
  s.add_constraint("layout is nchw or nchwc implies (oc_tiles - 1) * oc_vectors * simd_width < out_channels",
                   [OC](const ConfigView& c) {
                     return c["layout"] >= 2 || (c["oc_tiles"] - 1) * c["oc_vectors"] * simd_width < OC;
                   });
  s.add_constraint("layout is nchw or nchwc implies (ow_tiles - 1) * ow_tile < out_width", [OW](const ConfigView& c) {
    return c["layout"] >= 2 || (c["ow_tiles"] - 1) * c["ow_tile"] < OW;
  });
  s.add_constraint("layout is nchw or nchwc implies accumulator oc_tiles * oc_vectors * simd_width * oh_block * "
                   "ow_tiles * ow_tile * 4 <= 512 KiB",
                   [](const ConfigView& c) {
                     return c["layout"] >= 2 || c["oc_tiles"] * c["oc_vectors"] * simd_width * c["oh_block"] *
                                                        c["ow_tiles"] * c["ow_tile"] * 4 <= (512 << 10);
                   });
  // The GEMM layouts: tiles of ow_tile output channels x oc_vectors vectors of positions (of an
  // image taken as one row with gemm1x1, of a row with gemm_rows).
  s.add_constraint("layout is gemm1x1 or gemm_rows implies (ow_tile, oc_vectors) is a gemm tile", [](const ConfigView& c) {
    return c["layout"] < 2 || is_conv2d_gemm_tile(static_cast<int>(c["ow_tile"]), static_cast<int>(c["oc_vectors"]));
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
  s.add_constraint("layout == gemm_rows implies (ow_tile - 1) < out_channels and (oc_vectors - 1) * simd_width < "
                   "out_width, (oc_tiles - 1) * ow_tile < out_channels and (ow_tiles - 1) * oc_vectors * simd_width "
                   "< out_width",
                   [OC, OW](const ConfigView& c) {
                     return c["layout"] != 3 ||
                            (c["ow_tile"] - 1 < OC && (c["oc_vectors"] - 1) * simd_width < OW &&
                             (c["oc_tiles"] - 1) * c["ow_tile"] < OC &&
                             (c["ow_tiles"] - 1) * c["oc_vectors"] * simd_width < OW);
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
  if (p.layout == Conv2dLayout::gemm1x1 || p.layout == Conv2dLayout::gemm_rows) {  // the tile knobs, transposed
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
  std::string name{};
  /// Test hook: when set, called with the NCHW output after every run of the kernel (a
  /// deliberately perturbed output path, to prove that the verification reports wrong_result).
  std::function<void(std::span<float>)> output_fault{};

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
