// Isolated: measurements in a forked child. Identical results to the inner evaluator on replay
// (the generator's state comes back), crashes, aborts, FPE, exits, hangs and wrong results
// recorded with the right status inside a tuning run that goes on and finds the best healthy
// config, and OpenMP in the child after the parent used OpenMP.
#include <tunekit/evaluator/adaptive_cv.hpp>
#include <tunekit/evaluator/isolation.hpp>
#include <tunekit/kernels/cpu/conv2d.hpp>
#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/optimizer/grid_search.hpp>
#include <tunekit/presets.hpp>

#include <doctest/doctest.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <map>
#include <span>
#include <string>
#include <vector>

using tunekit::AdaptiveCV;
using tunekit::Config;
using tunekit::Deterministic;
using tunekit::Isolated;
using tunekit::Knob;
using tunekit::Measurement;
using tunekit::Rng;
using tunekit::RunResult;
using tunekit::SearchSpace;
using tunekit::Status;

TEST_CASE("Isolated: the same measurements and generator state as the inner evaluator on replay") {
  auto kernel = tunekit::ReplayKernel::from_csv(std::string(TUNEKIT_DATASETS) + "/convolution_A100.csv");
  Isolated<AdaptiveCV> isolated(AdaptiveCV({.max_runs = 32, .batch = 4}), {.timeout_seconds = 30});
  AdaptiveCV plain({.max_runs = 32, .batch = 4});
  Rng r1(5), r2(5), pick(9);
  std::vector<Config> configs;
  for (int i = 0; i < 40; ++i) configs.push_back(kernel.space().sample(pick));
  for (std::uint64_t i = 0; configs.size() < 43; ++i) {  // and three recorded as failed
    const Config c = kernel.space().from_index(i);
    if (kernel.space().is_valid(c) && !std::isfinite(kernel.recorded_ms(c))) configs.push_back(c);
  }
  std::size_t failed = 0;
  for (const Config& c : configs) {
    const Measurement a = isolated.measure(kernel, c, r1), b = plain.measure(kernel, c, r2);
    CHECK(a.status == b.status);
    CHECK(a.samples == b.samples);
    CHECK(a.mean == b.mean);
    CHECK(a.std == b.std);
    CHECK(a.cost == b.cost);
    CHECK(a.error == b.error);
    failed += !a.ok();
  }
  CHECK(r1 == r2);
  CHECK(failed >= 3);  // the statuses of configs recorded as failed came back too
}

namespace {

// Ten kinds of configs times four sizes: kinds 0-3 are healthy (time 1 ms x (1 + kind) x (1 +
// size/10)... the best is kind 0, size 0); the others break in the child.
enum Kind : std::uint32_t { healthy_kinds = 4, segfault = 4, aborts, fpe, exits, hangs, wrong };

SearchSpace fault_space() {
  SearchSpace s;
  s.add(Knob::range("kind", 0, 9));
  s.add(Knob::range("size", 0, 3));
  return s;
}

struct FaultyKernel {
  SearchSpace space_ = fault_space();
  const SearchSpace& space() const { return space_; }
  double flop() const { return 1e6; }

  static double seconds(const Config& c) { return 1e-3 * (1 + c[0]) * (1 + 0.1 * c[1]); }

  // The null store and the division by zero are the point (real SIGSEGV and SIGFPE in the child):
  // UBSan may not turn them into its own report and exit (scripts/sanitize.sh runs this test with
  // ASan's SEGV and FPE handlers off, so that the child dies by the signal). Not inlined: GCC
  // instruments a no_sanitize function's body where it is inlined into an instrumented caller
  // (seen when the unity build first compiled this file together with others).
#if defined(__GNUC__)
  __attribute__((no_sanitize("null", "integer-divide-by-zero"), noinline))
#endif
  RunResult run(const Config& c, std::size_t runs, Rng&) {
    switch (c[0]) {
      case segfault: {
        int* volatile p = nullptr;
        *p = 1;
        break;
      }
      case aborts: std::abort();
      case fpe: {
#if defined(__x86_64__) || defined(__i386__)
        volatile int zero = 0;
        volatile int q = 1 / zero;  // integer division by zero traps on x86
        (void)q;
#endif
        std::raise(SIGFPE);
        break;
      }
      case exits: std::_Exit(3);
      case hangs: {
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;
      }
      default: break;
    }
    return {.status = Status::ok, .seconds = std::vector<double>(runs, seconds(c)), .error = {},
            .simulated_cost = -1};
  }
  RunResult verify(const Config& c) {
    if (c[0] == wrong) return {.status = Status::wrong_result, .seconds = {}, .error = "C[0][0] = 3, reference 2",
                               .simulated_cost = -1};
    return {};
  }
};

}  // namespace

TEST_CASE("Isolated: crashing, hanging and wrong configs are recorded and the tuning finds the best healthy one") {
  FaultyKernel kernel;
  using Isolating = tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, tunekit::GridSearch,
                                   Isolated<Deterministic>>;
  Isolating tuner(kernel.space(), {.budget = {.trials = 40}, .plan_size = 8},
                  {.evaluator = Isolated<Deterministic>(Deterministic({.warmup = 1, .repeat = 3}),
                                                        {.timeout_seconds = 1.0})});
  Rng rng(1);
  const auto t0 = std::chrono::steady_clock::now();
  const auto result = tuner.tune(kernel, rng);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(result.trials == 40);  // every config, the broken ones included
  std::map<std::uint32_t, std::vector<const tunekit::Trial*>> by_kind;
  for (const auto& t : tuner.history()) by_kind[t.config[0]].push_back(&t);
  REQUIRE(by_kind.size() == 10);
  auto each = [&](std::uint32_t kind, Status s, const std::string& text) {
    CAPTURE(kind);
    REQUIRE(by_kind[kind].size() == 4);
    for (const auto* t : by_kind[kind]) {
      CHECK(t->measurement.status == s);
      CHECK(t->measurement.error.find(text) != std::string::npos);
    }
  };
  for (std::uint32_t k = 0; k < healthy_kinds; ++k) each(k, Status::ok, "");
  each(segfault, Status::runtime_error, "signal " + std::to_string(SIGSEGV));
  each(aborts, Status::runtime_error, "signal " + std::to_string(SIGABRT));
  each(fpe, Status::runtime_error, "signal " + std::to_string(SIGFPE));
  each(exits, Status::runtime_error, "exited with code 3");
  each(hangs, Status::timeout, "killed after");
  each(wrong, Status::wrong_result, "reference 2");
  for (const auto* t : by_kind[hangs]) CHECK(t->measurement.cost >= 1.0);
  REQUIRE(result.best);
  CHECK(result.best->config == Config{0, 0});
  CHECK(result.best->measurement.mean == doctest::Approx(1e-3));
  // Four hangs of 1 s; everything else takes milliseconds.
  CHECK(wall < 30.0);
}

TEST_CASE("Isolated: an OpenMP kernel runs in the child after the parent used OpenMP") {
  // GNU libgomp is not fork-safe: a child's parallel region on the forking thread waits for the
  // parent's pool threads forever. The child measures on a fresh thread, so this finishes.
  int parent_threads = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    parent_threads = omp_get_num_threads();
  }
  struct OmpKernel {
    SearchSpace space_ = [] {
      SearchSpace s;
      s.add(Knob::range("threads", 1, 2));
      return s;
    }();
    const SearchSpace& space() const { return space_; }
    double flop() const { return 1; }
    RunResult run(const Config& c, std::size_t runs, Rng&) {
      int seen = 0;
#pragma omp parallel num_threads(static_cast<int>(c[0]) + 1)
      {
#pragma omp single
        seen = omp_get_num_threads();
      }
      if (seen != static_cast<int>(c[0]) + 1)
        return {.status = Status::runtime_error, .seconds = {}, .error = "team of " + std::to_string(seen),
                .simulated_cost = -1};
      return {.status = Status::ok, .seconds = std::vector<double>(runs, 1e-3), .error = {}, .simulated_cost = -1};
    }
  } kernel;
  Isolated<> isolated(Deterministic(), {.timeout_seconds = 10});
  Rng rng(1);
  for (std::uint32_t t : {0u, 1u}) {
    const Measurement m = isolated.measure(kernel, Config{t}, rng);
    CAPTURE(m.error);
    CHECK(m.ok());
  }
  CHECK(parent_threads == 2);  // the parent's pool existed before the forks
}

TEST_CASE("Isolated: exceptions in the child and bad parameters") {
  struct Throwing {
    SearchSpace space_ = fault_space();
    const SearchSpace& space() const { return space_; }
    double flop() const { return 1; }
    RunResult run(const Config&, std::size_t, Rng&) { throw std::runtime_error("device lost"); }
  } kernel;
  Rng rng(1);
  const Measurement m = Isolated<>().measure(kernel, Config{0, 0}, rng);
  CHECK(m.status == Status::runtime_error);
  CHECK(m.error == "device lost");
  CHECK_THROWS_AS(Isolated<>(Deterministic(), {.timeout_seconds = 0}), std::invalid_argument);
  CHECK_THROWS_AS(Isolated<>(Deterministic(), {.timeout_seconds = INFINITY}), std::invalid_argument);
}

TEST_CASE("Isolated: a bundled kernel's wrong output is found by the child's verification") {
  // conv2d with a deliberately perturbed output path: prepare succeeds, the child runs, verifies
  // (Conv2dKernel::verify) and sends wrong_result back through the pipe.
  const tunekit::cpu::Conv2dShape shape{.batch = 1, .height = 5, .width = 9, .in_channels = 17, .out_channels = 3,
                                        .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  tunekit::cpu::Conv2dKernel k(shape, {.threads = 2, .seed = 1, .name = "perturbed",
                                       .output_fault = [](std::span<float> out) { out[1] -= 1e-3f; }});
  tunekit::Rng rng(8);
  tunekit::Isolated<tunekit::Deterministic> isolated(tunekit::Deterministic({.warmup = 1, .repeat = 2}),
                                                      {.timeout_seconds = 30.0});
  const auto m = isolated.measure(k, k.space().sample(rng), rng);
  CHECK(m.status == tunekit::Status::wrong_result);
  CHECK(m.error.find("exceeds the tolerance") != std::string::npos);
}
