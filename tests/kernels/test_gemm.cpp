#include <tunekit/kernels/cpu/gemm.hpp>
#include <tunekit/presets.hpp>

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using tunekit::cpu::GemmLoop;
using tunekit::cpu::GemmParams;

// Runs sgemm with `p` on random operands of the given sizes and row strides (lda >= k, ...) and
// returns the largest error relative to the rounding-error bound of sgemm_reference (<= 1 is
// correct). C starts as NaN, so an element never written fails too.
double relative_error(const GemmParams& p, std::size_t m, std::size_t n, std::size_t k, std::size_t pad,
                      int threads, tunekit::Rng& rng) {
  const std::size_t lda = k + pad, ldb = n + pad, ldc = n + pad;
  tunekit::cpu::AlignedBuffer a(m * lda), b(k * ldb), c(m * ldc);
  tunekit::cpu::fill_uniform(a, rng);
  tunekit::cpu::fill_uniform(b, rng);
  std::fill(c.data(), c.data() + m * ldc, std::nanf(""));
  // Dense copies for the reference.
  std::vector<float> ad(m * k), bd(k * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < k; ++j) ad[i * k + j] = a[i * lda + j];
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < n; ++j) bd[i * n + j] = b[i * ldb + j];
  std::vector<double> ref, bound;
  tunekit::cpu::sgemm_reference(m, n, k, ad.data(), bd.data(), ref, bound);
  tunekit::cpu::GemmWorkspace ws;
  tunekit::cpu::sgemm(p, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc, ws, threads);
  double worst = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const double e = std::abs(c[i * ldc + j] - ref[i * n + j]) / bound[i * n + j];
      worst = std::isfinite(e) ? std::max(worst, e) : HUGE_VAL;
    }
  return worst;
}

}  // namespace

TEST_CASE("sgemm: every micro-kernel, unroll, packing and parallel loop is exact within the bound") {
  // Odd sizes: no dimension is a multiple of any block, so every edge path runs; the blocks are
  // small so that each loop has several iterations.
  tunekit::Rng rng(2024);
  for (auto [mr, nv] : tunekit::cpu::gemm_shapes)
    for (int unroll : {1, 2, 4, 8})
      for (int packing = 0; packing < 4; ++packing)
        for (GemmLoop loop : {GemmLoop::jc, GemmLoop::ic, GemmLoop::jr}) {
          GemmParams p;
          p.mr = mr;
          p.nr = nv * tunekit::cpu::simd_width;
          p.mc = static_cast<std::size_t>(2 * mr);
          p.nc = static_cast<std::size_t>(2 * p.nr);
          p.kc = 13;
          p.pack_a = packing & 1;
          p.pack_b = packing & 2;
          p.parallel = loop;
          p.unroll = unroll;
          CAPTURE(p.mr);  // not the structured binding: clang 14 cannot capture one in a lambda
          CAPTURE(p.nr);
          CAPTURE(unroll);
          CAPTURE(packing);
          CAPTURE(static_cast<int>(loop));
          const std::size_t m = static_cast<std::size_t>(5 * mr + 3), n = p.nr * 4 + 7, k = 41;
          CHECK(relative_error(p, m, n, k, 0, 2, rng) <= 1.0);
        }
}

TEST_CASE("sgemm: random configs of the space on odd shapes and strides") {
  const auto space = tunekit::cpu::gemm_space();
  tunekit::Rng rng(77);
  struct Shape {
    std::size_t m, n, k, pad;
  };
  for (const Shape& s : {Shape{1, 1, 1, 0}, Shape{37, 53, 29, 0}, Shape{129, 67, 300, 3}, Shape{5, 100, 1, 1},
                         Shape{200, 17, 1100, 0}, Shape{3, 257, 64, 5}}) {
    for (int trial = 0; trial < 12; ++trial) {
      const auto c = space.sample(rng);
      CAPTURE(space.describe(c));
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.k);
      CHECK(relative_error(tunekit::cpu::gemm_params(space, c), s.m, s.n, s.k, s.pad, 1 + trial % 2, rng) <= 1.0);
    }
  }
}

TEST_CASE("sgemm: k == 0 gives zeros, bad parameters are rejected") {
  tunekit::cpu::GemmWorkspace ws;
  std::vector<float> c(6, 5.0f);
  GemmParams p;
  tunekit::cpu::sgemm(p, 2, 3, 0, nullptr, 0, nullptr, 3, c.data(), 3, ws, 1);
  for (float x : c) CHECK(x == 0.0f);
  GemmParams bad = p;
  bad.mr = 5;
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  bad = p;
  bad.mc = static_cast<std::size_t>(p.mr) * 3 + 1;
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  bad = p;
  bad.unroll = 3;
  CHECK_THROWS_AS(bad.validate(), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::cpu::sgemm(p, 2, 3, 4, c.data(), 3, c.data(), 3, c.data(), 3, ws, 1),
                  std::invalid_argument);  // lda < k
}

TEST_CASE("the GEMM space: tens of thousands of valid configs, all satisfying the constraints") {
  const auto space = tunekit::cpu::gemm_space();
  const auto valid = space.count_valid();
  CHECK(valid >= 20'000);
  tunekit::Rng rng(5);
  for (int i = 0; i < 500; ++i) {
    const auto p = tunekit::cpu::gemm_params(space, space.sample(rng));
    CHECK_NOTHROW(p.validate());
    CHECK(p.mc * p.kc * 4 <= (2u << 20));
  }
}

TEST_CASE("GemmKernel verifies the output of the last run: a corrupted result is wrong_result") {
  tunekit::cpu::GemmKernel kernel(45, 70, 33, {.threads = 2, .seed = 3});
  tunekit::Rng rng(9);
  const auto c = kernel.space().sample(rng);
  REQUIRE(kernel.prepare(c).status == tunekit::Status::ok);
  CHECK(kernel.verify(c).status == tunekit::Status::wrong_result);  // prepare computes nothing: C is NaN
  // Timed runs return one positive time per run.
  const auto t = kernel.run(c, 3, rng);
  REQUIRE(t.seconds.size() == 3);
  for (double s : t.seconds) CHECK(s > 0);
  CHECK(kernel.verify(c).status == tunekit::Status::ok);
  kernel.c()[7 * 70 + 11] += 1e-3f;  // far above the bound (about 33 * 2^-24 * 33 / 4)
  const auto r = kernel.verify(c);
  CHECK(r.status == tunekit::Status::wrong_result);
  CHECK(r.error.find("C[7][11]") == 0);
}

TEST_CASE("a short tuning run of the GEMM kernel ends with a valid, verified best config") {
  tunekit::cpu::GemmKernel kernel(67, 45, 130, {.threads = 2, .seed = 4});
  tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = 20}});
  tunekit::Rng rng(10);
  const auto r = tuner.tune(kernel, rng);
  CHECK(r.trials == 20);
  REQUIRE(r.best);
  CHECK(kernel.space().is_valid(r.best->config));
  CHECK(tunekit::Deterministic().measure(kernel, r.best->config, rng).status == tunekit::Status::ok);
  for (const auto& t : tuner.history()) CHECK(t.measurement.status == tunekit::Status::ok);
}
