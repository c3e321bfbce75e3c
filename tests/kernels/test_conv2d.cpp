#include <tunekit/kernels/cpu/conv2d.hpp>
#include <tunekit/kernels/cpu/resnet18.hpp>
#include <tunekit/presets.hpp>
#include <tunekit/tuner.hpp>

#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using tunekit::Config;
using tunekit::Status;
using tunekit::cpu::Conv2dKernel;
using tunekit::cpu::Conv2dShape;

// Odd shapes: 1x1, 3x3 and 7x7 kernels, padding, stride 2, sizes that are no multiple of any
// block (5x9 inputs, 3 or 17 channels), uneven padding and stride per axis, batch 2.
const std::vector<Conv2dShape> odd_shapes{
    {.batch = 1, .height = 5, .width = 9, .in_channels = 3, .out_channels = 17, .kernel_h = 1, .kernel_w = 1},
    {.batch = 1, .height = 5, .width = 9, .in_channels = 17, .out_channels = 3, .kernel_h = 3, .kernel_w = 3,
     .pad_h = 1, .pad_w = 1},
    {.batch = 1, .height = 9, .width = 11, .in_channels = 17, .out_channels = 33, .kernel_h = 3, .kernel_w = 3,
     .pad_h = 1, .pad_w = 1, .stride_h = 2, .stride_w = 2},
    {.batch = 1, .height = 11, .width = 13, .in_channels = 3, .out_channels = 17, .kernel_h = 7, .kernel_w = 7,
     .pad_h = 3, .pad_w = 3, .stride_h = 2, .stride_w = 2},
    {.batch = 2, .height = 5, .width = 9, .in_channels = 17, .out_channels = 17, .kernel_h = 1, .kernel_w = 1,
     .stride_h = 2, .stride_w = 2},
    {.batch = 1, .height = 6, .width = 10, .in_channels = 5, .out_channels = 19, .kernel_h = 3, .kernel_w = 5,
     .pad_h = 0, .pad_w = 2, .stride_h = 1, .stride_w = 2},
};

// An independent check of a kernel's output against its double-precision reference: a loose
// relative bound (fp32 sums of at most a few hundred products of values in [-1, 1)).
double worst_relative_error(const Conv2dKernel& k) {
  double worst = 0.0;
  for (std::size_t i = 0; i < k.shape().output_size(); ++i) {
    const double err = std::abs(static_cast<double>(k.output()[i]) - k.reference()[i]);
    worst = std::max(worst, std::isfinite(err) ? err / (1.0 + std::abs(k.reference()[i])) : HUGE_VAL);
  }
  return worst;
}

// A random valid config whose knob `name` has the value `value` (drawn until one has).
Config sample_with(const Conv2dKernel& k, const std::string& name, const std::string& value, tunekit::Rng& rng) {
  const auto knob = k.space().knob_index(name);
  Config c = k.space().sample(rng);
  while (k.space().knob(knob).to_string(c[knob]) != value) c = k.space().sample(rng);
  return c;
}

// The direct plan's tiles (ow_tile, oc_vectors) that this target instantiates and that fit its
// vector registers, at most `out_width` positions wide.
std::vector<std::pair<int, int>> direct_tiles(std::size_t out_width) {
  namespace cpu = tunekit::cpu;
  std::vector<std::pair<int, int>> tiles;
  for (auto w : cpu::conv2d_tile_knob_values())
    for (int v = 1; v <= cpu::conv2d_max_oc_vectors; ++v) {
      const int t = static_cast<int>(w);
      if (cpu::is_conv2d_tile(t, v) && cpu::conv2d_tile_registers(t, v) <= cpu::vector_registers &&
          static_cast<std::size_t>(t) <= out_width)
        tiles.emplace_back(t, v);
    }
  return tiles;
}

// What an evaluator does with one configuration, untimed: prepare, one run, verify (the output
// of that run). The first failure, or verify's result.
tunekit::RunResult run_and_verify(Conv2dKernel& k, const Config& c, tunekit::Rng& rng) {
  tunekit::RunResult r = k.prepare(c);
  if (r.status == Status::ok) r = k.run(c, 1, rng);
  if (r.status == Status::ok) r = k.verify(c);
  return r;
}

// The largest error of `out` against the reference, in units of conv2d_reference's bound per
// element (a non-finite output counts as infinite).
double worst_over_bound(const tunekit::cpu::AlignedBuffer& out, const std::vector<double>& ref,
                        const std::vector<double>& bound) {
  double worst = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double err = std::abs(static_cast<double>(out[i]) - ref[i]);
    worst = std::max(worst, std::isfinite(err) ? err / bound[i] : HUGE_VAL);
  }
  return worst;
}


// Runs 30 random configs of `layout` per shape (threads 2, input seed `seed`) and checks each
// against the reference: verify's element-wise tolerance, the loose relative bound
// `relative_bound` (worst_relative_error) and the timed runs verified again. Returns the
// knob=value pairs the configs covered.
std::set<std::string> check_random_configs(const std::vector<Conv2dShape>& shapes, const std::string& layout,
                                           std::uint64_t seed, double relative_bound, tunekit::Rng& rng) {
  std::set<std::string> seen;
  for (const auto& shape : shapes) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = seed});
    for (int i = 0; i < 30; ++i) {
      const Config c = sample_with(k, "layout", layout, rng);
      CAPTURE(k.space().describe(c));
      const auto r = run_and_verify(k, c, rng);  // within the tolerance of conv2d_reference, element by element
      CHECK(r.status == Status::ok);
      CHECK(r.error.empty());
      CHECK(worst_relative_error(k) < relative_bound);
      const auto t = k.run(c, 2, rng);
      REQUIRE(t.status == Status::ok);
      CHECK(k.verify(c).status == Status::ok);  // the timed runs compute the same result
      for (std::size_t j = 0; j < c.size(); ++j)
        seen.insert(k.space().knob(j).name() + "=" + k.space().knob(j).to_string(c[j]));
    }
  }
  return seen;
}

// "ow_tile=R" for every row count R of the GEMM layouts' tiles this build offers (AVX-512's 32
// vector registers hold more of them than AVX2's 16).
std::vector<std::string> gemm_row_knob_values() {
  std::vector<std::string> values;
  for (int rows : tunekit::cpu::conv2d_gemm_rows)
    for (int vectors = 1; vectors <= tunekit::cpu::conv2d_max_oc_vectors; ++vectors)
      if (tunekit::cpu::is_conv2d_gemm_tile(rows, vectors)) {
        values.push_back("ow_tile=" + std::to_string(rows));
        break;
      }
  return values;
}

// For every register tile of the GEMM layouts this build offers, on each shape:
// configure(rows, vectors, check), where check(params) makes the plan and checks two of its runs
// (the second reusing the buffers of the first) against conv2d_reference, element by element.
template <class Configure>
void check_every_gemm_tile(const std::vector<Conv2dShape>& shapes, std::uint64_t seed, Configure configure) {
  for (const auto& shape : shapes) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = seed});
    std::vector<double> ref, bound;
    tunekit::cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
    tunekit::cpu::AlignedBuffer out(shape.output_size());
    auto check = [&](const tunekit::cpu::Conv2dParams& params) {
      tunekit::cpu::Conv2dPlan plan(shape, params, k.weights(), 2);
      for (int run = 0; run < 2; ++run) {
        std::fill(out.data(), out.data() + out.size(), std::nanf(""));
        plan(k.input(), out.data());
        CHECK(worst_over_bound(out, ref, bound) <= 1.0);
      }
    };
    for (int rows : tunekit::cpu::conv2d_gemm_rows)
      for (int vectors = 1; vectors <= tunekit::cpu::conv2d_max_oc_vectors; ++vectors) {
        if (!tunekit::cpu::is_conv2d_gemm_tile(rows, vectors)) continue;
        CAPTURE(rows);
        CAPTURE(vectors);
        configure(rows, vectors, check);
      }
  }
}

}  // namespace

TEST_CASE("conv2d: Conv2dShape gives output sizes and FLOP, and validate names a bad field") {
  const Conv2dShape s{.batch = 2, .height = 9, .width = 11, .in_channels = 5, .out_channels = 7,
                      .kernel_h = 3, .kernel_w = 5, .pad_h = 1, .pad_w = 2, .stride_h = 2, .stride_w = 3};
  CHECK(s.out_height() == 5);  // (9 + 2 - 3) / 2 + 1
  CHECK(s.out_width() == 4);   // (11 + 4 - 5) / 3 + 1
  CHECK(s.flop() == 2.0 * 2 * 7 * 5 * 4 * 5 * 3 * 5);
  CHECK_NOTHROW(s.validate());
  Conv2dShape bad = s;
  bad.in_channels = 0;
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("in_channels"), std::invalid_argument);
  bad = s;
  bad.stride_w = 0;
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("stride_w"), std::invalid_argument);
  bad = s;
  bad.kernel_h = 12;  // larger than the padded height 11
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
}

TEST_CASE("conv2d: the ResNet-18 table holds TVM's 12 layers with FLOP = 2 N OC OH OW IC KH KW") {
  // TVM's x86 workloads of resnet18_v1: (batch, H, W, in_ch, out_ch, kh, kw, pad_h, pad_w,
  // stride_h, stride_w).
  constexpr std::array<std::array<std::int64_t, 11>, 12> tvm{{
      {1, 224, 224, 3, 64, 7, 7, 3, 3, 2, 2}, {1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1},
      {1, 56, 56, 64, 64, 1, 1, 0, 0, 1, 1},  {1, 56, 56, 64, 128, 3, 3, 1, 1, 2, 2},
      {1, 56, 56, 64, 128, 1, 1, 0, 0, 2, 2}, {1, 28, 28, 128, 128, 3, 3, 1, 1, 1, 1},
      {1, 28, 28, 128, 256, 3, 3, 1, 1, 2, 2}, {1, 28, 28, 128, 256, 1, 1, 0, 0, 2, 2},
      {1, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1}, {1, 14, 14, 256, 512, 3, 3, 1, 1, 2, 2},
      {1, 14, 14, 256, 512, 1, 1, 0, 0, 2, 2}, {1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1},
  }};
  const auto& tasks = tunekit::cpu::resnet18_conv2d_tasks;
  REQUIRE(tasks.size() == 12);
  std::set<std::string> names;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    CAPTURE(i);
    const auto& w = tvm[i];
    const auto& s = tasks[i].shape;
    CHECK(tasks[i].name == "resnet18.C" + std::to_string(i + 1));
    names.insert(std::string(tasks[i].name));
    const std::array<std::int64_t, 11> fields{
        static_cast<std::int64_t>(s.batch),       static_cast<std::int64_t>(s.height),
        static_cast<std::int64_t>(s.width),       static_cast<std::int64_t>(s.in_channels),
        static_cast<std::int64_t>(s.out_channels), static_cast<std::int64_t>(s.kernel_h),
        static_cast<std::int64_t>(s.kernel_w),    static_cast<std::int64_t>(s.pad_h),
        static_cast<std::int64_t>(s.pad_w),       static_cast<std::int64_t>(s.stride_h),
        static_cast<std::int64_t>(s.stride_w)};
    CHECK(fields == w);
    const std::int64_t oh = (w[1] + 2 * w[7] - w[5]) / w[9] + 1, ow = (w[2] + 2 * w[8] - w[6]) / w[10] + 1;
    const std::int64_t flop = 2 * w[0] * w[4] * oh * ow * w[3] * w[5] * w[6];
    CHECK(tasks[i].flop() == static_cast<double>(flop));
    CHECK(&tunekit::cpu::resnet18_conv2d_task(tasks[i].name) == &tasks[i]);
  }
  CHECK(names.size() == 12);
  CHECK(tasks[0].flop() == 236'027'904.0);  // 2 * 64 * 112 * 112 * 3 * 49
  CHECK(tasks[1].flop() == 231'211'008.0);  // 2 * 64 * 56 * 56 * 64 * 9
  CHECK(tasks[11].flop() == 231'211'008.0);  // 2 * 512 * 7 * 7 * 512 * 9
  CHECK_THROWS_AS(tunekit::cpu::resnet18_conv2d_task("resnet18.C13"), std::out_of_range);
}

TEST_CASE("conv2d: the space of a ResNet-18 layer has many valid configs and only sound ones") {
  const auto& task = tunekit::cpu::resnet18_conv2d_task("resnet18.C12");
  const auto space = tunekit::cpu::conv2d_space(task.shape);
  CHECK(space.count_valid() >= 100'000);
  tunekit::Rng rng(11);
  for (int i = 0; i < 200; ++i) {
    const auto p = tunekit::cpu::conv2d_params(space, space.sample(rng));
    CHECK_NOTHROW(p.validate());
    CHECK(tunekit::cpu::conv2d_tile_registers(p.ow_tile, p.oc_vectors) <= tunekit::cpu::vector_registers);
    if (p.layout == tunekit::cpu::Conv2dLayout::gemm_rows)
      CHECK(p.p_vectors == 1);  // one vector of positions covers a row of 7
    else
      CHECK(p.ow_tile <= 7);
    CHECK(p.oh_block <= 8);  // 8 covers the 7 output rows; 16 would be a second such value
    if (p.layout == tunekit::cpu::Conv2dLayout::nchw) {
      CHECK(p.in_cblock == 1);
      CHECK(p.packing == tunekit::cpu::Conv2dPacking::shared);
    }
  }
}

TEST_CASE("conv2d: the knobs a layout leaves unused are inactive, so one move switches layouts") {
  // C3 (1x1, stride 1): from an nchwc config with in_cblock 8, per-thread packing and blocks of
  // 4 rows, changing the layout lands on gemm1x1 with in_cblock 1, packing shared and oh_block 1
  // (and on nchw likewise); changing in_cblock of the gemm1x1 config is no move.
  const auto space = tunekit::cpu::conv2d_space(tunekit::cpu::resnet18_conv2d_task("resnet18.C3").shape);
  const std::string rest = ";oc_vectors=3;ow_tile=4;oc_tiles=2;ow_tiles=2;";
  const auto nchwc = space.parse("layout=nchwc;in_cblock=8;packing=per_thread" + rest +
                                 "oh_block=4;ic_block=64;reduction=ic_kh_kw;loop_order=ic_oc_ow;parallel=oh;schedule=static");
  const auto gemm = space.parse("layout=gemm1x1;in_cblock=1;packing=shared" + rest +
                                "oh_block=1;ic_block=64;reduction=ic_kh_kw;loop_order=ic_oc_ow;parallel=oh;schedule=static");
  const auto nchw = space.parse("layout=nchw;in_cblock=1;packing=shared" + rest +
                                "oh_block=4;ic_block=64;reduction=ic_kh_kw;loop_order=ic_oc_ow;parallel=oh;schedule=static");
  REQUIRE(space.is_valid(nchwc));
  REQUIRE(space.is_valid(gemm));
  REQUIRE(space.is_valid(nchw));
  const auto n = space.neighbours(nchwc);
  CHECK(std::find(n.begin(), n.end(), gemm) != n.end());
  CHECK(std::find(n.begin(), n.end(), nchw) != n.end());
  const auto g = space.hamming_neighbours(gemm);
  for (const auto& c : g) CHECK(space.view(c)["in_cblock"] == 1);  // in_cblock is inactive there
  CHECK(std::find(g.begin(), g.end(), nchwc) == g.end());  // back to nchwc: in_cblock stays 1
  // A config that uses an inactive knob is invalid: gemm1x1 with oh_block 2.
  auto wrong = gemm;
  wrong[space.knob_index("oh_block")] = 1;
  CHECK_FALSE(space.is_valid(wrong));
}

TEST_CASE("conv2d: randomly drawn configs match the reference on odd shapes") {
  tunekit::Rng rng(2024);
  std::set<std::string> seen;  // knob=value pairs covered
  for (const auto& shape : odd_shapes) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = 7});
    for (int i = 0; i < 40; ++i) {
      const Config c = k.space().sample(rng);
      CAPTURE(k.space().describe(c));
      const auto r = run_and_verify(k, c, rng);
      CHECK(r.status == Status::ok);
      CHECK(r.error.empty());
      CHECK(worst_relative_error(k) < 1e-5);
      const auto t = k.run(c, 2, rng);
      REQUIRE(t.status == Status::ok);
      REQUIRE(t.seconds.size() == 2);
      for (double s : t.seconds) CHECK(s > 0.0);
      CHECK(worst_relative_error(k) < 1e-5);  // the timed runs compute the same result
      for (std::size_t j = 0; j < c.size(); ++j)
        seen.insert(k.space().knob(j).name() + "=" + k.space().knob(j).to_string(c[j]));
    }
  }
  // The draws covered every layout, reduction order, loop order, parallel loop and schedule.
  for (const char* v : {"layout=nchw", "layout=nchwc", "reduction=ic_kh_kw", "reduction=kh_kw_ic",
                        "loop_order=ic_oc_ow", "loop_order=ic_ow_oc", "loop_order=oc_ic_ow", "parallel=oc",
                        "parallel=oh", "parallel=oc_oh", "parallel=oh_oc", "schedule=static",
                        "schedule=dynamic", "in_cblock=4", "in_cblock=16", "packing=shared",
                        "packing=per_thread"}) {
    CAPTURE(v);
    CHECK(seen.contains(v));
  }
}

TEST_CASE("conv2d: the kh_kw_ic order leaves out the taps of padding rows, and only those") {
  // Output rows whose kernel rows lie partly or wholly in the top or bottom padding (pad_h up to
  // kernel_h: the first and last rows of the second shape see nothing but padding, their output 0),
  // with stride 1 and 2; every draw in the kh_kw_ic order, the one that leaves those taps out.
  const std::vector<Conv2dShape> shapes{
      {.batch = 1, .height = 6, .width = 7, .in_channels = 9, .out_channels = 11, .kernel_h = 5, .kernel_w = 3,
       .pad_h = 2, .pad_w = 1},
      {.batch = 2, .height = 4, .width = 6, .in_channels = 5, .out_channels = 9, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 3, .pad_w = 1},
      {.batch = 1, .height = 10, .width = 9, .in_channels = 17, .out_channels = 8, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 2, .pad_w = 1, .stride_h = 2, .stride_w = 1},
  };
  tunekit::Rng rng(31);
  std::set<std::string> layouts;
  for (const auto& shape : shapes) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = 5});
    const auto layout = k.space().knob_index("layout");
    for (int i = 0; i < 30; ++i) {
      const Config c = sample_with(k, "reduction", "kh_kw_ic", rng);
      CAPTURE(k.space().describe(c));
      const auto r = run_and_verify(k, c, rng);
      CHECK(r.status == Status::ok);
      CHECK(worst_relative_error(k) < 1e-5);
      layouts.insert(k.space().knob(layout).to_string(c[layout]));
    }
  }
  CHECK(layouts.contains("nchw"));
  CHECK(layouts.contains("nchwc"));
}

TEST_CASE("conv2d: every instantiated inner kernel computes the right result in both layouts") {
  const Conv2dShape shape{.batch = 1, .height = 7, .width = 19, .in_channels = 6, .out_channels = 70,
                          .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .stride_h = 1, .stride_w = 1};
  Conv2dKernel k(shape, {.threads = 2, .seed = 3});
  std::vector<double> ref, bound;
  tunekit::cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
  tunekit::cpu::AlignedBuffer out(shape.output_size());
  int tiles = 0;
  for (int p : tunekit::cpu::conv2d_tile_widths)
    for (int v = 1; v <= tunekit::cpu::conv2d_max_oc_vectors; ++v) {
      if (!tunekit::cpu::is_conv2d_tile(p, v)) continue;
      ++tiles;
      for (auto layout : {tunekit::cpu::Conv2dLayout::nchw, tunekit::cpu::Conv2dLayout::nchwc}) {
        CAPTURE(p);
        CAPTURE(v);
        tunekit::cpu::Conv2dParams params;
        params.layout = layout;
        params.in_cblock = layout == tunekit::cpu::Conv2dLayout::nchw ? 1 : 4;
        if (layout == tunekit::cpu::Conv2dLayout::nchwc && (p + v) % 2 == 0)
          params.packing = tunekit::cpu::Conv2dPacking::per_thread;
        params.ow_tile = p;
        params.oc_vectors = v;
        params.ic_block = 4;  // two chunks: 4 + 2 channels
        tunekit::cpu::Conv2dPlan plan(shape, params, k.weights(), 2);
        std::fill(out.data(), out.data() + out.size(), std::nanf(""));
        plan(k.input(), out.data());
        double worst = 0.0;
        for (std::size_t i = 0; i < out.size(); ++i) {
          const double err = std::abs(static_cast<double>(out[i]) - ref[i]);
          worst = std::max(worst, std::isfinite(err) ? err / bound[i] : HUGE_VAL);
        }
        CHECK(worst <= 1.0);
      }
    }
  CHECK(tiles >= 30);
}

TEST_CASE("conv2d: a perturbed output is wrong_result through the evaluator, which verifies it, not prepare") {
  const Conv2dShape shape{.batch = 1, .height = 5, .width = 9, .in_channels = 17, .out_channels = 3,
                          .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  tunekit::Rng rng(5);
  {
    // The hook adds 1e-3 to one element after every run: far above the tolerance (about 1e-6).
    Conv2dKernel k(shape, {.threads = 2, .seed = 1, .name = "perturbed",
                           .output_fault = [](std::span<float> out) { out[out.size() / 2] += 1e-3f; }});
    const Config c = k.space().sample(rng);
    CHECK(k.prepare(c).status == Status::ok);  // prepare sets up; it neither runs nor checks
    tunekit::Deterministic evaluator;
    const auto m = evaluator.measure(k, c, rng);
    CHECK(m.status == Status::wrong_result);
    CHECK(m.throughput(k.flop()) == 0.0);  // a wrong configuration never becomes a best
    REQUIRE(m.error.rfind("max error ", 0) == 0);
    const double reported = std::stod(m.error.substr(10));
    CHECK(reported > 0.9e-3);
    CHECK(reported < 1.1e-3);
    CHECK(m.error.find("exceeds the tolerance") != std::string::npos);
    CHECK(m.error.find("output[0][1][2][4]") != std::string::npos);  // the middle element (67 of 135)
    // Without a warm-up the first timed runs are checked.
    const auto cold = tunekit::Deterministic({.warmup = 0, .repeat = 3}).measure(k, c, rng);
    CHECK(cold.status == Status::wrong_result);
    CHECK(cold.error == m.error);
  }
  {
    Conv2dKernel k(shape, {.threads = 2, .seed = 1, .name = "nan",
                           .output_fault = [](std::span<float> out) { out[0] = std::nanf(""); }});
    CHECK(tunekit::Deterministic().measure(k, k.space().sample(rng), rng).status == Status::wrong_result);
  }
  {
    // The same kernel without the hook is correct; before any run the output is NaN (prepare
    // computes nothing), and a config outside the space is excluded.
    Conv2dKernel k(shape, {.threads = 2, .seed = 1});
    const Config c = k.space().sample(rng);
    CHECK(k.prepare(c).status == Status::ok);
    CHECK(k.verify(c).status == Status::wrong_result);
    CHECK(k.run(c, 1, rng).status == Status::ok);
    CHECK(k.verify(c).status == Status::ok);
    CHECK(tunekit::Deterministic().measure(k, c, rng).status == Status::ok);
    Config bad = c;
    bad[k.space().knob_index("ow_tile")] = 13;  // ow_tile 28 > out_width 9
    CHECK(k.prepare(bad).status == Status::excluded);
    CHECK(k.run(Config{0}, 1, rng).status == Status::excluded);
  }
}

TEST_CASE("conv2d: with a perturbed output every trial is wrong_result and there is no best") {
  const Conv2dShape shape{.batch = 1, .height = 5, .width = 9, .in_channels = 17, .out_channels = 3,
                          .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  Conv2dKernel k(shape, {.threads = 2, .seed = 1, .name = "perturbed",
                         .output_fault = [](std::span<float> out) { out[1] -= 1e-3f; }});
  tunekit::Rng rng(8);
  tunekit::RandomSearchTuner tuner(k.space(), {.budget = {.trials = 8}, .plan_size = 4});
  const auto result = tuner.tune(k, rng);
  CHECK(result.trials == 8);
  CHECK_FALSE(result.best);
  for (const auto& t : tuner.history()) CHECK(t.measurement.status == Status::wrong_result);
  // The same through Isolated (the child verifies): tests/evaluator/test_isolation.cpp, since
  // ThreadSanitizer, which runs this file, cannot fork a process that has threads.
}

TEST_CASE("conv2d: a short random-search tuning run ends with a valid, verified best config") {
  // ResNet-18's C12 scaled down: 7x7 input, 64 channels in and out, 3x3, padding 1.
  const Conv2dShape shape{.batch = 1, .height = 7, .width = 7, .in_channels = 64, .out_channels = 64,
                          .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  Conv2dKernel k(shape, {.threads = 2, .seed = 3, .name = "small"});
  tunekit::RandomSearchTuner tuner(k.space(), {.budget = {.trials = 20}, .plan_size = 10});
  tunekit::Rng rng(42);
  const auto result = tuner.tune(k, rng);
  CHECK(result.trials == 20);
  REQUIRE(result.best);
  CHECK(result.best->measurement.ok());
  CHECK(result.best->measurement.throughput(k.flop()) > 0.0);
  CHECK(k.space().is_valid(result.best->config));
  for (const auto& t : tuner.history()) CHECK(t.measurement.status == Status::ok);
  // The best config verifies again on other data.
  Conv2dKernel again(shape, {.threads = 2, .seed = 9});
  CHECK(run_and_verify(again, result.best->config, rng).status == Status::ok);
}

TEST_CASE("conv2d: Conv2dParams and Conv2dPlan reject what they cannot run") {
  tunekit::cpu::Conv2dParams p;
  p.layout = tunekit::cpu::Conv2dLayout::nchw;
  p.in_cblock = 4;
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("in_cblock"), std::invalid_argument);
  p.in_cblock = 1;
  p.packing = tunekit::cpu::Conv2dPacking::per_thread;  // nothing to pack in the nchw layout
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("packing"), std::invalid_argument);
  p.packing = tunekit::cpu::Conv2dPacking::shared;
  p.ow_tile = 11;  // not instantiated
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("inner kernel"), std::invalid_argument);
  p.ow_tile = 28;
  p.oc_vectors = 2;  // 28 x 2 accumulators: over 32 registers
  CHECK_THROWS_AS(p.validate(), std::invalid_argument);
  p.oc_vectors = 1;
  CHECK_NOTHROW(p.validate());
  const Conv2dShape shape{.batch = 1, .height = 5, .width = 5, .in_channels = 2, .out_channels = 2,
                          .kernel_h = 1, .kernel_w = 1};
  std::vector<float> w(4, 1.0f);
  CHECK_THROWS_AS(tunekit::cpu::Conv2dPlan(shape, p, w.data(), 0), std::invalid_argument);
  CHECK_NOTHROW(tunekit::cpu::Conv2dPlan(shape, p, w.data(), 1));
  // Each algorithm's plan takes only its own layouts (Conv2dPlan picks the one a layout names).
  CHECK_THROWS_WITH_AS(tunekit::cpu::Conv2dGemm1x1Plan(shape, p, w.data(), 1), doctest::Contains("Conv2dDirectPlan"),
                       std::invalid_argument);
  tunekit::cpu::Conv2dParams gemm;
  gemm.layout = tunekit::cpu::Conv2dLayout::gemm1x1;
  gemm.in_cblock = 1;
  CHECK_THROWS_WITH_AS(tunekit::cpu::Conv2dDirectPlan(shape, gemm, w.data(), 1),
                       doctest::Contains("Conv2dGemm1x1Plan"), std::invalid_argument);
  CHECK_NOTHROW(tunekit::cpu::Conv2dGemm1x1Plan(shape, gemm, w.data(), 1));
  CHECK(tunekit::cpu::Conv2dPlan(shape, gemm, w.data(), 2).threads() == 2);
  tunekit::cpu::Conv2dParams rows = gemm;
  rows.layout = tunekit::cpu::Conv2dLayout::gemm_rows;
  CHECK_THROWS_WITH_AS(tunekit::cpu::Conv2dDirectPlan(shape, rows, w.data(), 1),
                       doctest::Contains("Conv2dGemmRowsPlan"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(tunekit::cpu::Conv2dGemmRowsPlan(shape, gemm, w.data(), 1),
                       doctest::Contains("Conv2dGemm1x1Plan"), std::invalid_argument);
  CHECK_NOTHROW(tunekit::cpu::Conv2dGemmRowsPlan(shape, rows, w.data(), 1));
  rows.packing = tunekit::cpu::Conv2dPacking::per_thread;  // its one copy is shared
  CHECK_THROWS_WITH_AS(rows.validate(), doctest::Contains("packing"), std::invalid_argument);
}

TEST_CASE("conv2d: the packed layouts are right for strided 1x1 kernels and every channel block") {
  // 1x1 stride 2 without padding packs a subsampled copy; every channel block of 2 or more is
  // packed by transposed blocks of simd_width channels x simd_width columns (one or two blocks of
  // a vector's channels for 8 and 16; blocks of fewer channels than a vector store 2, 4 or 8
  // floats per column), with partial loads for the last columns of a row (rows of 81, 14 and 20
  // columns read with stride 2, of 40, 7 and 30 columns read whole), and a subsampled copy of 1
  // channel per block from the even lanes of two vectors; the last block of 35 input channels,
  // and every block of 3 (a 7x7/2 kernel, as ResNet-18's first layer), has fewer channels than
  // the block (the others are written as zeros); 40 output positions per row take the
  // transposing write-out with an overlapping last block.
  const std::vector<Conv2dShape> shapes{
      {.batch = 2, .height = 9, .width = 81, .in_channels = 35, .out_channels = 33, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 4, .width = 40, .in_channels = 32, .out_channels = 48, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 1, .pad_w = 1},
      {.batch = 1, .height = 6, .width = 14, .in_channels = 32, .out_channels = 20, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 5, .width = 20, .in_channels = 16, .out_channels = 17, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 1, .stride_w = 2},
      {.batch = 1, .height = 7, .width = 7, .in_channels = 48, .out_channels = 16, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 1, .pad_w = 1},
      {.batch = 2, .height = 11, .width = 30, .in_channels = 3, .out_channels = 24, .kernel_h = 7, .kernel_w = 7,
       .pad_h = 3, .pad_w = 3, .stride_h = 2, .stride_w = 2},
  };
  for (const auto& shape : shapes) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = 5});
    std::vector<double> ref, bound;
    tunekit::cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
    tunekit::cpu::AlignedBuffer out(shape.output_size());
    for (int cblock : {1, 2, 4, 8, 16})
      for (auto packing : {tunekit::cpu::Conv2dPacking::shared, tunekit::cpu::Conv2dPacking::per_thread})
        for (int ow_tile : {5, 8}) {
          CAPTURE(cblock);
          CAPTURE(ow_tile);
          tunekit::cpu::Conv2dParams params;
          params.layout = tunekit::cpu::Conv2dLayout::nchwc;
          params.in_cblock = cblock;
          params.packing = packing;
          params.ow_tile = ow_tile;
          params.oc_vectors = 1;
          params.ow_tiles = 8;
          params.oh_block = 2;
          params.ic_block = 16;
          tunekit::cpu::Conv2dPlan plan(shape, params, k.weights(), 2);
          std::fill(out.data(), out.data() + out.size(), std::nanf(""));
          plan(k.input(), out.data());
          CHECK(worst_over_bound(out, ref, bound) <= 1.0);
        }
  }
}

TEST_CASE("conv2d: random gemm1x1 configs match the reference on odd 1x1 shapes") {
  // 1x1 kernels without padding, stride 1 and 2 (and mixed), output positions and channels that
  // are no multiple of the vector width or of any tile (63, 35, 30, 266, 108 and 49 positions),
  // input channels over several chunks, batch 2; ResNet-18's C11 (7x7 outputs) last.
  const std::vector<Conv2dShape> shapes{
      {.batch = 1, .height = 7, .width = 9, .in_channels = 19, .out_channels = 37, .kernel_h = 1, .kernel_w = 1},
      {.batch = 2, .height = 5, .width = 7, .in_channels = 70, .out_channels = 13, .kernel_h = 1, .kernel_w = 1},
      {.batch = 2, .height = 9, .width = 11, .in_channels = 21, .out_channels = 23, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 28, .width = 37, .in_channels = 5, .out_channels = 40, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 6, .width = 35, .in_channels = 9, .out_channels = 17, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 1, .stride_w = 2},
      tunekit::cpu::resnet18_conv2d_task("resnet18.C11").shape,
  };
  tunekit::Rng rng(77);
  const auto seen = check_random_configs(shapes, "gemm1x1", 13, 1e-5, rng);  // knob=value pairs covered
  std::vector<std::string> expected{"packing=shared", "packing=per_thread", "loop_order=ic_oc_ow",
                                    "loop_order=ic_ow_oc", "loop_order=oc_ic_ow", "parallel=oc", "parallel=oh",
                                    "parallel=oc_oh", "parallel=oh_oc", "schedule=static", "schedule=dynamic"};
  // The register tiles this build offers (AVX-512's 32 vector registers hold more of them than
  // AVX2's 16): every row count and vector count that is part of one.
  auto offered = [](int rows, int vectors) { return tunekit::cpu::is_conv2d_gemm_tile(rows, vectors); };
  for (const auto& v : gemm_row_knob_values()) expected.push_back(v);
  for (int vectors = 1; vectors <= tunekit::cpu::conv2d_max_oc_vectors; ++vectors)
    if (std::any_of(tunekit::cpu::conv2d_gemm_rows.begin(), tunekit::cpu::conv2d_gemm_rows.end(),
                    [&](int rows) { return offered(rows, vectors); }))
      expected.push_back("oc_vectors=" + std::to_string(vectors));
  CHECK(expected.size() >= 11 + 4 + 2);  // at least 4 row counts and 2 vector counts on any build
  for (const auto& v : expected) {
    CAPTURE(v);
    CHECK(seen.contains(v));
  }
}

TEST_CASE("conv2d: random gemm_rows configs match the reference on odd shapes, strides and paddings") {
  // Kernels of 3x3, 7x7, 1x3 and 1x1 with padding (gemm1x1's shapes are not offered), strides 1,
  // 2 and 3 (and mixed), padding 0 to 3, rows and channels that are no multiple of the vector
  // width or of any tile, several chunks of input channels, batch 2; C1's 3 input channels and
  // 7x7/2 kernel over a small image; a 3x3 layer of 64 channels and 14x14 outputs last.
  const std::vector<Conv2dShape> shapes{
      {.batch = 1, .height = 9, .width = 37, .in_channels = 3, .out_channels = 19, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 1, .pad_w = 1},
      {.batch = 2, .height = 11, .width = 21, .in_channels = 20, .out_channels = 13, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 1, .pad_w = 1, .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 10, .width = 40, .in_channels = 5, .out_channels = 9, .kernel_h = 1, .kernel_w = 3,
       .pad_h = 0, .pad_w = 2, .stride_h = 1, .stride_w = 3},
      {.batch = 1, .height = 6, .width = 17, .in_channels = 7, .out_channels = 11, .kernel_h = 1, .kernel_w = 1,
       .pad_h = 1, .pad_w = 1},
      {.batch = 1, .height = 30, .width = 45, .in_channels = 3, .out_channels = 17, .kernel_h = 7, .kernel_w = 7,
       .pad_h = 3, .pad_w = 3, .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 14, .width = 14, .in_channels = 64, .out_channels = 64, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 1, .pad_w = 1},
  };
  tunekit::Rng rng(78);
  // Sums of up to 576 products, hence the looser relative bound (one wrong tap: about 0.1); the
  // timed runs reuse the copy, whose padding must stay zero.
  const auto seen = check_random_configs(shapes, "gemm_rows", 14, 1e-4, rng);  // knob=value pairs covered
  std::vector<std::string> expected{"reduction=ic_kh_kw", "reduction=kh_kw_ic", "loop_order=ic_oc_ow",
                                    "loop_order=ic_ow_oc", "loop_order=oc_ic_ow", "parallel=oc", "parallel=oh",
                                    "parallel=oc_oh", "parallel=oh_oc", "schedule=static", "schedule=dynamic",
                                    "oh_block=1", "oh_block=2", "oh_block=4", "oh_block=8"};
  for (const auto& v : gemm_row_knob_values()) expected.push_back(v);
  for (const auto& v : expected) {
    CAPTURE(v);
    CHECK(seen.contains(v));
  }
}

TEST_CASE("conv2d: every gemm_rows tile, with a last tile of fewer channels and rows wholly in the padding") {
  // Output channels that leave each tile row count a last tile of other sizes (30: 2 for 4, 14 and
  // 28; 6 for 8 and 12; 14 for 16; none for 5, 6 and 10), which gemm_rows computes with a kernel
  // of fewer rows; two chunks of input channels (4 and 3); padding as deep as the kernel (3x3, pad 3: the
  // first and last output rows read only padding, and kh_kw_ic skips their taps), stride 2 and 1.
  const std::vector<Conv2dShape> shapes{
      {.batch = 1, .height = 5, .width = 19, .in_channels = 7, .out_channels = 30, .kernel_h = 3, .kernel_w = 3,
       .pad_h = 3, .pad_w = 1},
      {.batch = 2, .height = 12, .width = 27, .in_channels = 7, .out_channels = 30, .kernel_h = 5, .kernel_w = 3,
       .pad_h = 2, .pad_w = 2, .stride_h = 2, .stride_w = 2},
  };
  using tunekit::cpu::Conv2dReduction;
  check_every_gemm_tile(shapes, 23, [](int rows, int vectors, auto& check) {
    for (auto reduction : {Conv2dReduction::ic_kh_kw, Conv2dReduction::kh_kw_ic}) {
      CAPTURE(static_cast<int>(reduction));
      tunekit::cpu::Conv2dParams params;
      params.layout = tunekit::cpu::Conv2dLayout::gemm_rows;
      params.in_cblock = 1;
      params.packing = tunekit::cpu::Conv2dPacking::shared;
      params.oc_rows = rows;
      params.p_vectors = vectors;
      params.oc_tiles = 2;
      params.ow_tiles = 1;
      params.oh_block = 2;
      params.ic_block = 4;
      params.reduction = reduction;
      check(params);  // the second run reuses the copy of the first
    }
  });
}

TEST_CASE("conv2d: gemm_rows is offered for every kernel but 1x1 without padding, and its copy is shared") {
  for (const auto& task : tunekit::cpu::resnet18_conv2d_tasks) {
    CAPTURE(task.name);
    const auto& s = task.shape;
    const bool gemm1x1_shape = s.kernel_h == 1 && s.kernel_w == 1 && s.pad_h == 0 && s.pad_w == 0;
    Conv2dKernel k(s, {.threads = 1});
    const auto layout = k.space().knob_index("layout"), packing = k.space().knob_index("packing");
    tunekit::Rng rng(5);
    int rows = 0;
    for (int i = 0; i < 3000; ++i) {
      const Config c = k.space().sample(rng);
      if (k.space().knob(layout).to_string(c[layout]) != "gemm_rows") continue;
      ++rows;
      CHECK(k.space().knob(packing).to_string(c[packing]) == "shared");
    }
    if (gemm1x1_shape)
      CHECK(rows == 0);
    else
      CHECK(rows > 10);  // 1.4% of the valid configs of C10 and C12 (wider tiles than their rows are not)
  }
}

TEST_CASE("conv2d: gemm1x1 with packing per_thread reads strided input right in every tile and loop order") {
  // Strided 1x1 shapes whose vectors of 16 positions touch 1 to 4 input rows (output widths 28,
  // 14, 7, 5 and 3), partial last vectors (oc_rows 16 sends them to the tail kernel), strides 3
  // and (2, 1) / (1, 3), and stride 9 on a wide row, whose vectors need more than 4 runs of lanes
  // (so the block copy is made by the separate copy loop). Every tile and loop order, both
  // position-block sizes, batch 2.
  const std::vector<Conv2dShape> shapes{
      {.batch = 1, .height = 56, .width = 56, .in_channels = 9, .out_channels = 20, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 2, .height = 28, .width = 28, .in_channels = 17, .out_channels = 18, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 14, .width = 13, .in_channels = 33, .out_channels = 17, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 13, .width = 15, .in_channels = 6, .out_channels = 29, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 3, .stride_w = 3},
      {.batch = 1, .height = 7, .width = 6, .in_channels = 5, .out_channels = 16, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 2},
      {.batch = 1, .height = 9, .width = 23, .in_channels = 7, .out_channels = 9, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 1},
      {.batch = 1, .height = 5, .width = 40, .in_channels = 7, .out_channels = 9, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 1, .stride_w = 3},
      {.batch = 1, .height = 4, .width = 200, .in_channels = 3, .out_channels = 8, .kernel_h = 1, .kernel_w = 1,
       .stride_h = 2, .stride_w = 9},
  };
  using tunekit::cpu::Conv2dLoopOrder;
  using tunekit::cpu::Conv2dParallel;
  check_every_gemm_tile(shapes, 21, [](int rows, int vectors, auto& check) {
    for (auto order : {Conv2dLoopOrder::ic_oc_ow, Conv2dLoopOrder::ic_ow_oc, Conv2dLoopOrder::oc_ic_ow})
      for (int ow_tiles : {1, 3}) {
        CAPTURE(static_cast<int>(order));
        CAPTURE(ow_tiles);
        tunekit::cpu::Conv2dParams params;
        params.layout = tunekit::cpu::Conv2dLayout::gemm1x1;
        params.in_cblock = 1;
        params.packing = tunekit::cpu::Conv2dPacking::per_thread;
        params.oc_rows = rows;
        params.p_vectors = vectors;
        params.oc_tiles = 2;
        params.ow_tiles = ow_tiles;
        params.ic_block = 4;  // several chunks: each chunk's tiles accumulate
        params.loop_order = order;
        params.parallel = ow_tiles == 1 ? Conv2dParallel::oh_oc : Conv2dParallel::oc;
        check(params);
      }
  });
}

#if defined(__AVX512F__) || defined(__AVX2__)
TEST_CASE("conv2d: Conv2dInputVector reads the pixels a plain gather reads, in runs of two vectors' floats") {
  // Against element-by-element reads of random ascending pixel offsets (steps of 1 to 40 floats),
  // for 1 to simd_width lanes; set() fails exactly when more than max_runs runs are needed,
  // counted here independently (a run starts at a pixel 2 simd_width floats or more past the
  // run's first pixel: 32 with AVX-512, 16 with AVX2).
  constexpr int W = tunekit::cpu::simd_width, window = 2 * W;
  tunekit::Rng rng(5);
  std::vector<float> plane(W * 41 + 64);
  for (std::size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(i) + 0.5f;
  int read = 0, refused = 0, multi_run = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int count = 1 + static_cast<int>(rng() % W);
    const int step_max = 1 + static_cast<int>(rng() % 40);
    std::int32_t pixel[W];
    std::int32_t at = static_cast<std::int32_t>(rng() % 8);
    for (int j = 0; j < count; ++j) {
      pixel[j] = at;
      at += 1 + static_cast<std::int32_t>(rng() % static_cast<unsigned>(step_max));
    }
    int runs = 0;
    for (int j = 0, first = 0; j < count; ++j)
      if (j == 0 || pixel[j] >= first + window) {
        ++runs;
        first = pixel[j];
      }
    tunekit::cpu::detail::Conv2dInputVector v;
    const bool ok = v.set(pixel, count);
    CHECK(ok == (runs <= tunekit::cpu::detail::Conv2dInputVector::max_runs));
    if (!ok) {
      ++refused;
      continue;
    }
    ++read;
    multi_run += runs > 1;
    CHECK(v.runs == runs);
    float lanes[W];
    tunekit::cpu::detail::conv2d_store_read(lanes, v.read(plane.data()));
    for (int j = 0; j < W; ++j) CHECK(lanes[j] == (j < count ? plane[static_cast<std::size_t>(pixel[j])] : 0.0f));
  }
  CHECK(read > 500);
  CHECK(multi_run > 200);
  CHECK(refused > 100);
}

TEST_CASE("conv2d: Conv2dInputVector reads nothing outside its plane up to the last pixel it reads") {
  // A readable page between two that may not be touched (PROT_NONE). Every vector whose last
  // pixel is the last float before the upper one reads right (its loads touch no float past that
  // pixel), and so does every vector whose plane starts at the readable page (none before the
  // plane: the AVX2 reader's windows end at a run's last pixel and start within the plane).
  constexpr int W = tunekit::cpu::simd_width;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* map = mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(map != MAP_FAILED);
  REQUIRE(mprotect(map, page, PROT_NONE) == 0);
  REQUIRE(mprotect(static_cast<char*>(map) + 2 * page, page, PROT_NONE) == 0);
  float* base = reinterpret_cast<float*>(static_cast<char*>(map) + page);
  const std::size_t floats = page / sizeof(float);
  for (std::size_t i = 0; i < floats; ++i) base[i] = static_cast<float>(i) + 0.5f;
  const float* end = base + floats;
  int checked = 0;
  for (bool at_end : {true, false})
    for (int stride : {1, 2, 3, 5, 9})
      for (int start : {0, 1, 7, 14, 15, 16, 30})
        for (int count = 1; count <= W; ++count) {
          CAPTURE(at_end);
          CAPTURE(stride);
          CAPTURE(start);
          CAPTURE(count);
          // count pixels `stride` apart from `start` (offsets from `plane`); at_end: the last one
          // is the readable page's last float, else the plane is the page's first float.
          const int span = start + (count - 1) * stride;
          const float* plane = at_end ? end - span - 1 : base;
          std::int32_t pixel[W];
          for (int j = 0; j < count; ++j) pixel[j] = start + j * stride;
          tunekit::cpu::detail::Conv2dInputVector v;
          if (!v.set(pixel, count)) continue;
          float lanes[W];
          tunekit::cpu::detail::conv2d_store_read(lanes, v.read(plane));
          for (int j = 0; j < W; ++j) CHECK(lanes[j] == (j < count ? plane[pixel[j]] : 0.0f));
          ++checked;
        }
  CHECK(checked >= 2 * 5 * 7 * W);
  munmap(map, 3 * page);
}
#endif

TEST_CASE("conv2d: the space offers the tiles and block ranges of the target's vector registers") {
  namespace cpu = tunekit::cpu;
  // The register rule (shape.hpp): accumulators + loaded vectors + 1 broadcast <= registers.
  const auto values = cpu::conv2d_tile_knob_values();
  if (cpu::vector_registers >= 32) {  // AVX-512: every width, blocks of up to 8 tiles
    CHECK(values == std::vector<std::int64_t>(cpu::conv2d_tile_widths.begin(), cpu::conv2d_tile_widths.end()));
    CHECK(cpu::conv2d_gemm_rows == std::array<int, 7>{4, 6, 8, 12, 14, 16, 28});
    CHECK(cpu::conv2d_max_block_tiles == 8);
    CHECK(cpu::is_conv2d_gemm_tile(28, 1));
    CHECK(cpu::is_conv2d_gemm_tile(14, 2));
    CHECK(cpu::is_conv2d_gemm_tile(6, 4));
  } else {  // AVX2 (and the 16 registers of SSE2): widths up to 14, blocks of up to 16 tiles
    CHECK(values == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14});
    CHECK(cpu::conv2d_gemm_rows == std::array<int, 7>{4, 5, 6, 8, 10, 12, 14});
    CHECK(cpu::conv2d_max_block_tiles == 16);
    // (CAPTURE of copies: clang 14 cannot capture structured bindings in CAPTURE's lambda.)
    for (auto [rows, vectors] : {std::pair{14, 1}, {10, 1}, {6, 2}, {5, 2}, {4, 3}}) {
      const int tile_rows = rows, tile_vectors = vectors;
      CAPTURE(tile_rows);
      CAPTURE(tile_vectors);
      CHECK(cpu::is_conv2d_gemm_tile(rows, vectors));
      CHECK(rows * vectors + vectors + 1 <= 16);
    }
    for (auto [rows, vectors] : {std::pair{16, 1}, {8, 2}, {5, 3}, {4, 4}}) {
      const int tile_rows = rows, tile_vectors = vectors;
      CAPTURE(tile_rows);
      CAPTURE(tile_vectors);
      CHECK_FALSE(cpu::is_conv2d_gemm_tile(rows, vectors));  // 17 to 21 registers: they would spill
    }
  }
  for (auto w : values) {  // every value takes part in a tile that fits
    bool fits = false;
    for (int v = 1; v <= cpu::conv2d_max_oc_vectors; ++v)
      fits = fits || cpu::conv2d_tile_registers(static_cast<int>(w), v) <= cpu::vector_registers ||
             cpu::is_conv2d_gemm_tile(static_cast<int>(w), v);
    CHECK(fits);
  }
  // Drawn configs of a 1x1 layer and a 3x3 layer: every tile fits, blocks reach the largest size.
  for (const char* layer : {"resnet18.C3", "resnet18.C12"}) {
    CAPTURE(layer);
    const auto space = cpu::conv2d_space(cpu::resnet18_conv2d_task(layer).shape);
    tunekit::Rng rng(17);
    int largest_block = 0;
    for (int i = 0; i < 3000; ++i) {
      const auto p = cpu::conv2d_params(space, space.sample(rng));
      if (p.layout == cpu::Conv2dLayout::gemm1x1)
        CHECK(p.oc_rows * p.p_vectors + p.p_vectors + 1 <= cpu::vector_registers);
      else
        CHECK(cpu::conv2d_tile_registers(p.ow_tile, p.oc_vectors) <= cpu::vector_registers);
      CHECK(p.oc_tiles <= cpu::conv2d_max_block_tiles);
      CHECK(p.ow_tiles <= cpu::conv2d_max_block_tiles);
      largest_block = std::max({largest_block, p.oc_tiles, p.ow_tiles});
    }
    CHECK(largest_block == cpu::conv2d_max_block_tiles);
  }
}

TEST_CASE("conv2d: every tile the space offers, in the largest blocks, matches the reference") {
  // The tiles of this target (with AVX2 the gemm1x1 rows 5 and 10 and 16 tiles per block too),
  // each in blocks of conv2d_max_block_tiles x conv2d_max_block_tiles tiles (and of 1 x 1): the
  // direct layouts on a padded 3x3 shape, gemm1x1 on a 1x1 shape with stride 1 and stride 2
  // (packing shared and per_thread), channels and positions no multiple of any tile.
  namespace cpu = tunekit::cpu;
  const int B = cpu::conv2d_max_block_tiles;
  const Conv2dShape direct{.batch = 1, .height = 9, .width = 23, .in_channels = 5, .out_channels = 150,
                           .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  const Conv2dShape unit{.batch = 2, .height = 7, .width = 13, .in_channels = 11, .out_channels = 150,
                         .kernel_h = 1, .kernel_w = 1};
  const Conv2dShape strided{.batch = 1, .height = 15, .width = 29, .in_channels = 11, .out_channels = 150,
                            .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  int plans = 0;
  for (const auto& shape : {direct, unit, strided}) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = 29});
    std::vector<double> ref, bound;
    cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
    cpu::AlignedBuffer out(shape.output_size());
    const bool gemm = shape.kernel_h == 1;
    for (auto w : cpu::conv2d_tile_knob_values())
      for (int v = 1; v <= cpu::conv2d_max_oc_vectors; ++v)
        for (int tiles : {1, B})
          for (int variant = 0; variant < 2; ++variant) {
            const int t = static_cast<int>(w);
            cpu::Conv2dParams params;
            if (gemm) {
              if (!cpu::is_conv2d_gemm_tile(t, v)) continue;
              params.layout = cpu::Conv2dLayout::gemm1x1;
              params.in_cblock = 1;
              params.oc_rows = t;
              params.p_vectors = v;
              const bool unit_stride = shape.stride_h == 1;
              if (variant == 1 && unit_stride) continue;  // stride 1 reads in place: shared only
              params.packing = variant == 1 ? cpu::Conv2dPacking::per_thread : cpu::Conv2dPacking::shared;
            } else {
              if (!cpu::is_conv2d_tile(t, v) || cpu::conv2d_tile_registers(t, v) > cpu::vector_registers) continue;
              params.layout = variant == 0 ? cpu::Conv2dLayout::nchw : cpu::Conv2dLayout::nchwc;
              params.in_cblock = variant == 0 ? 1 : 4;
              params.ow_tile = t;
              params.oc_vectors = v;
            }
            CAPTURE(t);
            CAPTURE(v);
            CAPTURE(tiles);
            CAPTURE(variant);
            params.oc_tiles = tiles;
            params.ow_tiles = tiles;
            params.ic_block = 4;  // three chunks of input channels: 4 + 4 + 3 (or 4 + 1)
            params.parallel = tiles == 1 ? cpu::Conv2dParallel::oc_oh : cpu::Conv2dParallel::oc;
            cpu::Conv2dPlan plan(shape, params, k.weights(), 2);
            std::fill(out.data(), out.data() + out.size(), std::nanf(""));
            plan(k.input(), out.data());
            CHECK(worst_over_bound(out, ref, bound) <= 1.0);
            ++plans;
          }
  }
  CHECK(plans >= 40);
}

TEST_CASE("conv2d: nchwc tiles of a 1x1 kernel run across the ends of the rows of a block and match the reference") {
  // A 1x1 kernel without padding in the nchwc layout tiles the positions of each block of
  // oh_block rows as one row (its packed copy holds them contiguously): a tile may start in one
  // row and end in the next, the last tile of a block computes only the positions left, and the
  // last block of rows may be shorter. Every direct tile of this target, on 7 output rows of 13
  // positions (stride 1) and 8 of 15 (stride 2), in blocks of 1, 3 (a short last block) and 8
  // rows and of 1 or the most tiles, channel blocks 1 and 8.
  namespace cpu = tunekit::cpu;
  const Conv2dShape unit{.batch = 2, .height = 7, .width = 13, .in_channels = 11, .out_channels = 40,
                         .kernel_h = 1, .kernel_w = 1};
  const Conv2dShape strided{.batch = 1, .height = 15, .width = 29, .in_channels = 11, .out_channels = 40,
                            .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  int plans = 0;
  for (const auto& shape : {unit, strided}) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = 31});
    std::vector<double> ref, bound;
    cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
    cpu::AlignedBuffer out(shape.output_size());
    for (const auto& [width, vectors] : direct_tiles(shape.out_width())) {
      const int t = width, v = vectors;  // copies: clang 14's lambdas (CAPTURE) take no structured binding
      for (int oh_block : {1, 3, 8})
        for (int tiles : {1, cpu::conv2d_max_block_tiles}) {
          CAPTURE(t);
          CAPTURE(v);
          CAPTURE(oh_block);
          CAPTURE(tiles);
          cpu::Conv2dParams params;
          params.layout = cpu::Conv2dLayout::nchwc;
          params.in_cblock = oh_block == 3 ? 1 : 8;
          params.packing = tiles == 1 ? cpu::Conv2dPacking::per_thread : cpu::Conv2dPacking::shared;
          params.ow_tile = t;
          params.oc_vectors = v;
          params.oc_tiles = tiles;
          params.ow_tiles = tiles;
          params.oh_block = oh_block;
          params.ic_block = 4;
          params.parallel = oh_block == 1 ? cpu::Conv2dParallel::oh : cpu::Conv2dParallel::oc_oh;
          cpu::Conv2dPlan plan(shape, params, k.weights(), 2);
          std::fill(out.data(), out.data() + out.size(), std::nanf(""));
          plan(k.input(), out.data());
          CHECK(worst_over_bound(out, ref, bound) <= 1.0);
          ++plans;
        }
    }
  }
  CHECK(plans >= 100);
}

TEST_CASE("conv2d: nchwc tiles of a strided 1x1 kernel with a copy per thread gather their input as they go") {
  // Conv2dDirectPlan::gathers(): in the nchwc layout, a strided 1x1 kernel without padding and
  // packing per_thread, the first output-channel tile to reach a position tile (per thread, chunk
  // and image) reads its input from the NCHW input and leaves it in the thread's copy for the
  // others, for tiles of up to conv2d_tile_position_registers positions; shared packing, unit
  // stride and wider tiles copy before the blocks. Every tile of the target, two images, three
  // chunks (the last one short), blocks of 1, 3 (a short last block) and 8 rows, every loop
  // order, both threads on all positions (parallel oc) or on rows of their own (oh); each plan
  // run twice, the second time on the negated input (it must gather again, not read the first
  // run's copy).
  namespace cpu = tunekit::cpu;
  const Conv2dShape strided{.batch = 2, .height = 15, .width = 29, .in_channels = 11, .out_channels = 40,
                            .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  const Conv2dShape unit{.batch = 1, .height = 7, .width = 13, .in_channels = 11, .out_channels = 40,
                         .kernel_h = 1, .kernel_w = 1};
  int plans = 0, gathering = 0;
  for (const auto& shape : {strided, unit}) {
    CAPTURE(shape.to_string());
    Conv2dKernel k(shape, {.threads = 2, .seed = 37});
    std::vector<double> ref, bound;
    cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
    cpu::AlignedBuffer negated(shape.input_size()), out(shape.output_size());
    for (std::size_t i = 0; i < negated.size(); ++i) negated[i] = -k.input()[i];
    std::vector<double> negated_ref(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) negated_ref[i] = -ref[i];
    for (const auto& [width, vectors] : direct_tiles(shape.out_width())) {
      const int t = width, v = vectors;  // copies: clang 14's lambdas (CAPTURE) take no structured binding
      for (auto packing : {cpu::Conv2dPacking::per_thread, cpu::Conv2dPacking::shared})
        for (int oh_block : {1, 3, 8})
          for (auto order : {cpu::Conv2dLoopOrder::ic_oc_ow, cpu::Conv2dLoopOrder::ic_ow_oc,
                             cpu::Conv2dLoopOrder::oc_ic_ow})
            for (auto parallel : {cpu::Conv2dParallel::oc, cpu::Conv2dParallel::oh}) {
              const bool gathers = packing == cpu::Conv2dPacking::per_thread && shape.stride_w == 2 &&
                                   t <= cpu::detail::conv2d_tile_position_registers;
              CAPTURE(t);
              CAPTURE(v);
              CAPTURE(static_cast<int>(packing));
              CAPTURE(oh_block);
              CAPTURE(static_cast<int>(order));
              CAPTURE(static_cast<int>(parallel));
              const cpu::Conv2dParams params{.layout = cpu::Conv2dLayout::nchwc, .in_cblock = 8, .packing = packing,
                                             .oc_vectors = v, .ow_tile = t, .oc_tiles = 2, .ow_tiles = 2,
                                             .oh_block = oh_block, .ic_block = 4, .loop_order = order,
                                             .parallel = parallel};
              cpu::Conv2dDirectPlan plan(shape, params, k.weights(), 2);
              CHECK(plan.gathers() == gathers);
              gathering += plan.gathers();
              for (int run = 0; run < 2; ++run) {
                std::fill(out.data(), out.data() + out.size(), std::nanf(""));
                plan(run == 0 ? k.input() : negated.data(), out.data());
                CHECK(worst_over_bound(out, run == 0 ? ref : negated_ref, bound) <= 1.0);
              }
              ++plans;
            }
    }
  }
  CHECK(plans >= 300);
  CHECK(gathering >= 100);
}

TEST_CASE("conv2d: gemm1x1 gathers strided input in its first tile with AVX-512 and AVX2, else copies it") {
  // Conv2dGemm1x1Plan::gathers(): packing per_thread with a stride other than 1 gathers each
  // block's copy in its first output-channel tile where the target has the reader (AVX-512,
  // AVX2), as long as every vector of positions needs at most four runs of lanes (a stride of 17
  // puts every lane in a run of its own: the copy loop); shared packing and stride 1 never do.
  // Each plan's output matches the reference.
  namespace cpu = tunekit::cpu;
#if defined(__AVX512F__) || defined(__AVX2__)
  constexpr bool reader = true;
#else
  constexpr bool reader = false;
#endif
  struct Case {
    Conv2dShape shape;
    cpu::Conv2dPacking packing;
    bool gathers;
  };
  const Conv2dShape c5_like{.batch = 2, .height = 56, .width = 56, .in_channels = 7, .out_channels = 21,
                            .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  const Conv2dShape c11_like{.batch = 1, .height = 14, .width = 14, .in_channels = 19, .out_channels = 13,
                             .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  const Conv2dShape wide_stride{.batch = 1, .height = 3, .width = 150, .in_channels = 5, .out_channels = 9,
                                .kernel_h = 1, .kernel_w = 1, .stride_h = 1, .stride_w = 17};
  const Conv2dShape unit{.batch = 1, .height = 9, .width = 9, .in_channels = 5, .out_channels = 9,
                         .kernel_h = 1, .kernel_w = 1};
  const std::vector<Case> cases{
      {c5_like, cpu::Conv2dPacking::per_thread, reader},   {c11_like, cpu::Conv2dPacking::per_thread, reader},
      {c5_like, cpu::Conv2dPacking::shared, false},        {wide_stride, cpu::Conv2dPacking::per_thread, false},
      {unit, cpu::Conv2dPacking::shared, false},
  };
  // With 16 registers the tiles whose gather kernel would spill copy with the copy loop instead.
  if (cpu::vector_registers < 32) {
    for (auto [rows, vectors] : {std::pair{10, 1}, {5, 2}, {4, 2}}) CHECK(cpu::detail::conv2d_gather_fits(rows, vectors));
    for (auto [rows, vectors] : {std::pair{12, 1}, {14, 1}, {6, 2}, {4, 3}})
      CHECK_FALSE(cpu::detail::conv2d_gather_fits(rows, vectors));
  } else {
    for (int rows : cpu::conv2d_gemm_rows)
      for (int vectors = 1; vectors <= cpu::conv2d_max_oc_vectors; ++vectors)
        CHECK(cpu::detail::conv2d_gather_fits(rows, vectors));
  }
  int tiles_gathering = 0;
  for (const auto& [shape, packing, gathers] : cases) {
    const std::string shape_text = shape.to_string();
    const int packing_value = static_cast<int>(packing);
    CAPTURE(shape_text);
    CAPTURE(packing_value);
    Conv2dKernel k(shape, {.threads = 2, .seed = 31});
    std::vector<double> ref, bound;
    cpu::conv2d_reference(shape, k.input(), k.weights(), ref, bound);
    cpu::AlignedBuffer out(shape.output_size());
    for (int rows : cpu::conv2d_gemm_rows)
      for (int vectors = 1; vectors <= cpu::conv2d_max_oc_vectors; ++vectors) {
        if (!cpu::is_conv2d_gemm_tile(rows, vectors)) continue;
        CAPTURE(rows);
        CAPTURE(vectors);
        cpu::Conv2dParams params;
        params.layout = cpu::Conv2dLayout::gemm1x1;
        params.in_cblock = 1;
        params.packing = packing;
        params.oc_rows = rows;
        params.p_vectors = vectors;
        params.oc_tiles = 2;
        params.ow_tiles = 2;
        params.ic_block = 8;
        cpu::Conv2dGemm1x1Plan plan(shape, params, k.weights(), 2);
        CHECK(plan.gathers() == (gathers && cpu::detail::conv2d_gather_fits(rows, vectors)));
        tiles_gathering += plan.gathers();
        std::fill(out.data(), out.data() + out.size(), std::nanf(""));
        plan(k.input(), out.data());
        CHECK(worst_over_bound(out, ref, bound) <= 1.0);
      }
  }
  CHECK((tiles_gathering >= 8) == reader);  // 2 shapes x at least 4 tiles (AVX2: 4, 5, 6, 8, 10 rows; 4 x 2, 5 x 2)
}

TEST_CASE("conv2d: gemm1x1 is offered only for 1x1 kernels without padding") {
  auto gemm_configs = [](const Conv2dShape& shape) {
    const auto space = tunekit::cpu::conv2d_space(shape);
    tunekit::Rng rng(3);
    int gemm = 0;
    for (int i = 0; i < 3000; ++i) {
      const auto p = tunekit::cpu::conv2d_params(space, space.sample(rng));
      if (p.layout == tunekit::cpu::Conv2dLayout::gemm1x1) {
        ++gemm;
        CHECK(p.in_cblock == 1);
        CHECK(tunekit::cpu::is_conv2d_gemm_tile(p.oc_rows, p.p_vectors));
        CHECK(p.oc_rows == p.ow_tile);  // the tile knobs, transposed
        CHECK(p.oc_vectors == p.p_vectors);
      }
    }
    return gemm;
  };
  CHECK(gemm_configs(tunekit::cpu::resnet18_conv2d_task("resnet18.C3").shape) > 0);
  CHECK(gemm_configs(tunekit::cpu::resnet18_conv2d_task("resnet18.C8").shape) > 0);
  CHECK(gemm_configs(tunekit::cpu::resnet18_conv2d_task("resnet18.C6").shape) == 0);
  const Conv2dShape padded{.batch = 1, .height = 5, .width = 5, .in_channels = 4, .out_channels = 4,
                           .kernel_h = 1, .kernel_w = 1, .pad_h = 1, .pad_w = 1};
  CHECK(gemm_configs(padded) == 0);
  tunekit::cpu::Conv2dParams p;
  p.layout = tunekit::cpu::Conv2dLayout::gemm1x1;
  p.in_cblock = 1;
  CHECK_NOTHROW(p.validate());
  std::vector<float> w(4 * 4 * 9, 1.0f);
  CHECK_THROWS_WITH_AS(tunekit::cpu::Conv2dPlan(padded, p, w.data(), 1), doctest::Contains("1x1 kernel"),
                       std::invalid_argument);
  p.oc_rows = 7;  // no such tile on any target
  CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("GEMM tile"), std::invalid_argument);
}
