#include <tunekit/evaluator/deterministic.hpp>
#include <tunekit/kernels/cuda/gemm.hpp>

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

namespace {

namespace cu = tunekit::cuda;

// The NVRTC compilations below target compute_90 (PTX): no device is needed.
const cu::CompileOptions ptx90{.arch = "compute_90"};

// A device to run on, or nullopt with the reason in `why` (no driver, no GPU).
std::optional<cu::Device> open_device(std::string& why) {
  try {
    return cu::Device::open(0);
  } catch (const cu::DriverError& e) {
    why = e.what();
    return std::nullopt;
  }
}

}  // namespace

TEST_CASE("cuda gemm: the space respects the device limits and the geometry covers C") {
  const auto space = cu::gemm_space(1000, 1022, 518);
  tunekit::Rng rng(7);
  for (int i = 0; i < 500; ++i) {
    const tunekit::Config c = space.sample(rng);
    const auto v = space.view(c);
    const auto threads = (v["BM"] / v["TM"]) * (v["BN"] / v["TN"]);
    CHECK(threads <= 1024);
    CHECK(threads >= 32);
    CHECK((v["BM"] + v["BN"]) * v["BK"] * 4 * (v["DBUF"] ? 2 : 1) <= 48 * 1024);
    CHECK(v["VEC"] == 0);  // 1022 is not a multiple of 4
    const cu::LaunchGeometry g = cu::gemm_geometry(space, c);
    CHECK(g.threads() == threads);
    CHECK(g.grid[0] * v["BN"] >= 1022);
    CHECK(g.grid[1] * v["BM"] >= 1000);
    CHECK(g.grid[2] == v["KSPLIT"]);
  }
  // A smaller shared-memory limit removes configs.
  const auto small = cu::gemm_space(1024, 1024, 1024, {.max_threads = 256, .max_shared = 8 * 1024});
  for (int i = 0; i < 200; ++i) {
    const tunekit::Config c = small.sample(rng);  // the view refers to it
    const auto v = small.view(c);
    CHECK((v["BM"] + v["BN"]) * v["BK"] * 4 * (v["DBUF"] ? 2 : 1) <= 8 * 1024);
    CHECK((v["BM"] / v["TM"]) * (v["BN"] / v["TN"]) <= 256);
  }
}

TEST_CASE("cuda gemm: 50 random valid configs compile with NVRTC (compute_90)") {
  // Odd sizes (bounds checks) and sizes that allow float4 loads.
  for (const auto& [m, n, k] : {std::tuple{1000, 1022, 518}, std::tuple{512, 1024, 2048}}) {
    const auto space = cu::gemm_space(m, n, k);
    const std::string source = cu::gemm_source();
    tunekit::Rng rng(11);
    for (int i = 0; i < 25; ++i) {
      const tunekit::Config c = space.sample(rng);
      const auto defines = cu::gemm_defines(space, c);
      const cu::CompileResult r = cu::compile(source, "sgemm.cu", defines, ptx90);
      INFO(cu::Launcher::join(defines));
      INFO(r.error);
      REQUIRE(r.ok);
      CHECK(r.image.find(".entry tk_kernel") != std::string::npos);
      CHECK(cu::to_run_result(r).status == tunekit::Status::ok);
    }
  }
}

TEST_CASE("cuda gemm: a broken source or macro is a build_error with NVRTC's log") {
  const auto space = cu::gemm_space(256, 256, 256);
  tunekit::Rng rng(3);
  auto defines = cu::gemm_defines(space, space.sample(rng));

  SUBCASE("syntax error in the source") {
    const cu::CompileResult r = cu::compile(cu::gemm_source() + "\nthis is not CUDA;\n", "broken.cu", defines, ptx90);
    CHECK_FALSE(r.ok);
    CHECK(r.image.empty());
    CHECK(r.error.find("nvrtcCompileProgram") != std::string::npos);
    CHECK(r.error.find("broken.cu") != std::string::npos);  // the log names the file and line
    const tunekit::RunResult rr = cu::to_run_result(r);
    CHECK(rr.status == tunekit::Status::build_error);
    CHECK(rr.error.find("NVRTC") != std::string::npos);
    CHECK(rr.error.find(r.log) != std::string::npos);
  }
  SUBCASE("a knob's macro missing") {
    std::erase_if(defines, [](const cu::Define& d) { return d.name == "BM"; });
    const cu::CompileResult r = cu::compile(cu::gemm_source(), "sgemm.cu", defines, ptx90);
    CHECK_FALSE(r.ok);
    CHECK(r.log.find("BM") != std::string::npos);
    CHECK(cu::to_run_result(r).status == tunekit::Status::build_error);
  }
  SUBCASE("an architecture NVRTC does not know") {
    const cu::CompileResult r = cu::compile(cu::gemm_source(), "sgemm.cu", defines, {.arch = "compute_1"});
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.error.empty());
  }
}

TEST_CASE("cuda gemm: the program cache compiles once per config and ahead of time") {
  const auto space = cu::gemm_space(300, 300, 300);
  cu::ProgramCache cache(cu::gemm_source(), "sgemm.cu", ptx90);
  tunekit::Rng rng(5);
  const tunekit::Config a = space.sample(rng), b = space.sample(rng);
  cache.prefetch(cu::gemm_defines(space, a));
  cache.prefetch(cu::gemm_defines(space, a));  // in flight already: no second compilation
  CHECK(cache.size() == 1);
  const cu::CompileResult& ra = cache.get(cu::gemm_defines(space, a));
  CHECK(ra.ok);
  const cu::CompileResult& rb = cache.get(cu::gemm_defines(space, b));
  CHECK(rb.ok);
  CHECK(cache.size() == (space.to_index(a) == space.to_index(b) ? 1u : 2u));
  CHECK(&cache.get(cu::gemm_defines(space, a)) == &ra);  // cached, not compiled again
}

TEST_CASE("cuda gemm: random configs on the device match cuBLAS") {
  std::string why;
  if (!open_device(why)) {
    MESSAGE("skipped, no usable CUDA device: " << why);
    return;
  }
  cu::GemmKernel kernel(257, 252, 132);
  tunekit::Rng rng(13);
  for (int i = 0; i < 20; ++i) {
    const tunekit::Config c = kernel.space().sample(rng);
    INFO(cu::Launcher::join(cu::gemm_defines(kernel.space(), c)));
    tunekit::RunResult r = kernel.prepare(c);  // then one run, then its check
    if (r.status == tunekit::Status::ok) r = kernel.run(c, 1, rng);
    if (r.status == tunekit::Status::ok) r = kernel.verify(c);
    INFO(r.error);
    CHECK(r.status == tunekit::Status::ok);
  }
  tunekit::Deterministic eval({.warmup = 1, .repeat = 3});
  const tunekit::Measurement m = eval.measure(kernel, kernel.space().sample(rng), rng);
  CHECK(m.status == tunekit::Status::ok);
  CHECK(m.mean > 0.0);
  const tunekit::RunResult ref = kernel.run_cublas(3);
  CHECK(ref.status == tunekit::Status::ok);
  CHECK(ref.seconds.size() == 3);
}
