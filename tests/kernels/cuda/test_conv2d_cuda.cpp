#include <tunekit/evaluator/deterministic.hpp>
#include <tunekit/kernels/cuda/conv2d.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

namespace cu = tunekit::cuda;

const cu::CompileOptions ptx90{.arch = "compute_90"};

// ResNet-18's C2 (3x3, pad 1) and a stride-2 layer with odd sizes.
const cu::Conv2dShape resnet_c2{1, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1};
const cu::Conv2dShape odd_stride2{2, 15, 13, 5, 12, 3, 3, 1, 1, 2, 2};

}  // namespace

TEST_CASE("cuda conv2d: the space respects the limits, has no duplicates, and the geometry covers Y") {
  const auto space = cu::conv2d_space(odd_stride2);
  tunekit::Rng rng(21);
  std::set<std::string> algos;
  for (int i = 0; i < 500; ++i) {
    const tunekit::Config c = space.sample(rng);
    const auto v = space.view(c);
    const cu::LaunchGeometry g = cu::conv2d_geometry(space, c);
    CHECK(g.threads() <= 1024);
    CHECK(g.threads() >= 32);
    algos.insert(v.label("ALGO"));
    if (v["ALGO"] == 0) {
      CHECK(g.grid[0] * v["BX"] >= odd_stride2.out_w());
      CHECK(g.grid[1] * v["BY"] >= odd_stride2.out_h());
      CHECK(g.grid[2] * v["KPT"] >= odd_stride2.batch * odd_stride2.out_channels);
      CHECK(v["BM"] == 64);  // the other algorithm's knobs are inactive, at their one value
      CHECK(v["TM"] == 4);
    } else {
      CHECK((v["BM"] + v["BN"]) * v["BK"] * 4 * (v["DBUF"] ? 2 : 1) <= 48 * 1024);
      CHECK(g.grid[0] * v["BN"] >= odd_stride2.batch * odd_stride2.out_h() * odd_stride2.out_w());
      CHECK(g.grid[1] * v["BM"] >= odd_stride2.out_channels);
      CHECK(v["BX"] == 32);
      CHECK(v["KPT"] == 1);
    }
  }
  CHECK(algos.size() == 2);
}

TEST_CASE("cuda conv2d: one step of ALGO switches algorithm, either way (the other's knobs inactive)") {
  const auto space = cu::conv2d_space(resnet_c2);
  const std::size_t algo = space.knob_index("ALGO");
  tunekit::Rng rng(5);
  std::size_t crossed[2] = {0, 0};
  for (int i = 0; i < 200; ++i) {
    const tunekit::Config c = space.sample(rng);
    const auto n = space.neighbours(c);
    const auto other = std::find_if(n.begin(), n.end(), [&](const tunekit::Config& x) { return x[algo] != c[algo]; });
    REQUIRE(other != n.end());  // every config has a neighbour of the other algorithm
    const auto v = space.view(*other);
    if (v["ALGO"] == 0) {
      CHECK(v["BM"] == 64);
      CHECK(v["BX"] * v["BY"] >= 32);
    } else {
      CHECK(v["BX"] == 32);
    }
    ++crossed[v["ALGO"]];
  }
  CHECK(crossed[0] > 0);
  CHECK(crossed[1] > 0);
}

TEST_CASE("cuda conv2d: 50 random valid configs compile with NVRTC (compute_90)") {
  for (const cu::Conv2dShape& shape : {resnet_c2, odd_stride2}) {
    const auto space = cu::conv2d_space(shape);
    const std::string source = cu::conv2d_source();
    tunekit::Rng rng(17);
    for (int i = 0; i < 25; ++i) {
      const tunekit::Config c = space.sample(rng);
      const auto defines = cu::conv2d_defines(space, c);
      const cu::CompileResult r = cu::compile(source, "conv2d.cu", defines, ptx90);
      INFO(cu::Launcher::join(defines));
      INFO(r.error);
      REQUIRE(r.ok);
      CHECK(r.image.find(".entry tk_kernel") != std::string::npos);
    }
  }
}

TEST_CASE("cuda conv2d: a broken macro is a build_error with NVRTC's log") {
  const auto space = cu::conv2d_space(resnet_c2);
  tunekit::Rng rng(2);
  auto defines = cu::conv2d_defines(space, space.sample(rng));
  std::erase_if(defines, [](const cu::Define& d) { return d.name == "CONV_C"; });
  const cu::CompileResult r = cu::compile(cu::conv2d_source(), "conv2d.cu", defines, ptx90);
  CHECK_FALSE(r.ok);
  CHECK(r.log.find("CONV_C") != std::string::npos);
  const tunekit::RunResult rr = cu::to_run_result(r);
  CHECK(rr.status == tunekit::Status::build_error);
  CHECK(rr.error.find("CONV_C") != std::string::npos);
}

TEST_CASE("cuda conv2d: the CPU reference matches a hand-computed convolution") {
  // 1 image, 1 channel, 3x3 input, 2x2 filter of ones, stride 1, pad 0: sums of 2x2 windows.
  const cu::Conv2dShape s{1, 3, 3, 1, 1, 2, 2, 0, 0, 1, 1};
  const std::vector<float> w{1, 1, 1, 1}, x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> y, bound;
  cu::conv2d_reference(s, w.data(), x.data(), y, bound);
  CHECK(y == std::vector<double>{12, 16, 24, 28});
  for (double b : bound) CHECK(b > 0.0);
  // pad 1, stride 2: the corners of the padded input.
  const cu::Conv2dShape p{1, 3, 3, 1, 1, 2, 2, 1, 1, 2, 2};
  cu::conv2d_reference(p, w.data(), x.data(), y, bound);
  CHECK(y == std::vector<double>{1, 5, 11, 28});
}

TEST_CASE("cuda conv2d: random configs on the device match the reference") {
  std::optional<cu::Device> device;
  try {
    device.emplace(cu::Device::open(0));
  } catch (const cu::DriverError& e) {
    MESSAGE("skipped, no usable CUDA device: " << std::string(e.what()));
    return;
  }
  for (const cu::Conv2dShape& shape : {odd_stride2, resnet_c2}) {
    cu::Conv2dKernel kernel(shape);
    tunekit::Rng rng(23);
    for (int i = 0; i < 15; ++i) {
      const tunekit::Config c = kernel.space().sample(rng);
      INFO(cu::Launcher::join(cu::conv2d_defines(kernel.space(), c)));
      tunekit::RunResult r = kernel.prepare(c);  // then one run, then its check
      if (r.status == tunekit::Status::ok) r = kernel.run(c, 1, rng);
      if (r.status == tunekit::Status::ok) r = kernel.verify(c);
      INFO(r.error);
      CHECK(r.status == tunekit::Status::ok);
    }
    tunekit::Deterministic eval({.warmup = 1, .repeat = 3});
    const tunekit::Measurement m = eval.measure(kernel, kernel.space().sample(rng), rng);
    CHECK(m.status == tunekit::Status::ok);
  }
}
