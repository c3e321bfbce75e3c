// The Deterministic evaluator: warm-up, repeats, trimmed mean, failures, min_repeat_ms, timeout
// and cost, with scripted kernels whose times are known.
#include <tunekit/evaluator/deterministic.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using tunekit::Config;
using tunekit::Deterministic;
using tunekit::DeterministicParams;
using tunekit::Knob;
using tunekit::Measurement;
using tunekit::Rng;
using tunekit::RunResult;
using tunekit::SearchSpace;
using tunekit::Status;

namespace {

SearchSpace one_knob_space() {
  SearchSpace s;
  s.add(Knob::range("x", 1, 4));
  return s;
}

// A kernel whose run() is a script: `script(call, runs)` gives the result of the call-th request
// (0 = the first one, the warm-up when there is one). Records the runs of every request.
struct ScriptedKernel {
  SearchSpace space_ = one_knob_space();
  std::function<RunResult(std::size_t call, std::size_t runs)> script;
  std::vector<std::size_t> runs_per_call;
  std::vector<Config> configs;

  const SearchSpace& space() const { return space_; }
  double flop() const { return 1e9; }
  RunResult run(const Config& c, std::size_t runs, Rng&) {
    configs.push_back(c);
    const std::size_t call = runs_per_call.size();
    runs_per_call.push_back(runs);
    return script(call, runs);
  }
};

// The same with a prepare() step.
struct PreparedKernel : ScriptedKernel {
  std::function<RunResult()> on_prepare;
  int prepares = 0;
  std::size_t runs_before_prepare = 0;
  RunResult prepare(const Config&) {
    ++prepares;
    runs_before_prepare = runs_per_call.size();
    return on_prepare();
  }
};

static_assert(tunekit::Kernel<ScriptedKernel>);
static_assert(!tunekit::PreparableKernel<ScriptedKernel>);
static_assert(tunekit::PreparableKernel<PreparedKernel>);

// `runs` times of `seconds` each, at a simulated cost of their sum.
RunResult times(std::size_t runs, double seconds) {
  return {.status = Status::ok, .seconds = std::vector<double>(runs, seconds), .error = {},
          .simulated_cost = static_cast<double>(runs) * seconds};
}

const double infinite = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("Deterministic: warm-up runs are not samples, repeat samples of number runs") {
  ScriptedKernel k;
  // The warm-up returns absurd times (100 s); the repeats 1, 2, 3 ms per run.
  k.script = [](std::size_t call, std::size_t runs) {
    return times(runs, call == 0 ? 100.0 : 1e-3 * static_cast<double>(call));
  };
  Deterministic eval({.warmup = 2, .number = 4, .repeat = 3});
  Rng rng(1);
  const Config c{2};
  const Measurement m = eval.measure(k, c, rng);
  REQUIRE(m.ok());
  CHECK(m.error.empty());
  CHECK(k.runs_per_call == std::vector<std::size_t>{2, 4, 4, 4});
  for (const auto& seen : k.configs) CHECK(seen == c);
  REQUIRE(m.samples.size() == 3);
  CHECK(m.samples[0] == doctest::Approx(1e-3));
  CHECK(m.samples[1] == doctest::Approx(2e-3));
  CHECK(m.samples[2] == doctest::Approx(3e-3));
  for (double s : m.samples) CHECK(s < 1.0);  // no warm-up time leaked in
  // Three samples: min and max dropped, the mean is the middle one.
  CHECK(m.mean == doctest::Approx(2e-3));
  CHECK(m.std == 0.0);
  CHECK(m.throughput(1e9) == doctest::Approx(1e9 / 2e-3));
}

TEST_CASE("Deterministic: no warm-up call when warmup = 0") {
  ScriptedKernel k;
  k.script = [](std::size_t, std::size_t runs) { return times(runs, 5e-3); };
  Deterministic eval({.warmup = 0, .number = 1, .repeat = 2});
  Rng rng(1);
  const Measurement m = eval.measure(k, {0}, rng);
  REQUIRE(m.ok());
  CHECK(k.runs_per_call == std::vector<std::size_t>{1, 1});
  CHECK(m.samples.size() == 2);
}

TEST_CASE("Deterministic: a sample is the mean of its number runs") {
  ScriptedKernel k;
  // Runs within a request take 1, 2, 3, 4 ms; later requests are 10 ms slower.
  k.script = [](std::size_t call, std::size_t runs) {
    RunResult r{.status = Status::ok, .seconds = {}, .error = {}, .simulated_cost = 0.0};
    for (std::size_t i = 0; i < runs; ++i)
      r.seconds.push_back(1e-3 * static_cast<double>(i + 1 + 10 * call));
    return r;
  };
  Deterministic eval({.warmup = 0, .number = 4, .repeat = 2});
  Rng rng(1);
  const Measurement m = eval.measure(k, {0}, rng);
  REQUIRE(m.ok());
  REQUIRE(m.samples.size() == 2);
  CHECK(m.samples[0] == doctest::Approx(2.5e-3));
  CHECK(m.samples[1] == doctest::Approx(12.5e-3));
  // Two samples: nothing dropped; sample std of {2.5, 12.5} ms is 10/sqrt(2) ms.
  CHECK(m.mean == doctest::Approx(7.5e-3));
  CHECK(m.std == doctest::Approx(10e-3 / std::sqrt(2.0)));
}

TEST_CASE("Deterministic: with more than two samples the mean drops the min and the max") {
  ScriptedKernel k;
  const std::vector<double> ms{5, 1, 3, 9, 4, 6};  // per sample, in measuring order
  k.script = [&](std::size_t call, std::size_t runs) {
    return times(runs, ms.at(call) * 1e-3);
  };
  Deterministic eval({.warmup = 0, .number = 1, .repeat = 6});
  Rng rng(1);
  const Measurement m = eval.measure(k, {0}, rng);
  REQUIRE(m.ok());
  REQUIRE(m.samples.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(m.samples[i] == doctest::Approx(ms[i] * 1e-3));
  // Kept: 3, 4, 5, 6 ms -> mean 4.5 ms, sample std sqrt(((1.5^2 + 0.5^2) * 2) / 3) ms.
  CHECK(m.mean == doctest::Approx(4.5e-3).epsilon(1e-12));
  CHECK(m.std == doctest::Approx(std::sqrt(5.0 / 3.0) * 1e-3).epsilon(1e-12));
}

TEST_CASE("Deterministic: one sample gives its value and std 0") {
  ScriptedKernel k;
  k.script = [](std::size_t, std::size_t runs) { return times(runs, 7e-3); };
  Deterministic eval({.warmup = 1, .number = 1, .repeat = 1});
  Rng rng(1);
  const Measurement m = eval.measure(k, {0}, rng);
  REQUIRE(m.ok());
  CHECK(m.mean == doctest::Approx(7e-3));
  CHECK(m.std == 0.0);
}

TEST_CASE("Deterministic: exceptions and failure statuses become failed measurements") {
  Rng rng(1);
  Deterministic eval({.warmup = 1, .number = 1, .repeat = 3});

  SUBCASE("run throws a std::exception -> runtime_error with its message") {
    ScriptedKernel k;
    k.script = [](std::size_t call, std::size_t runs) -> RunResult {
      if (call == 2) throw std::runtime_error("illegal memory access");
      return times(runs, 1e-3);
    };
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.status == Status::runtime_error);
    CHECK_FALSE(m.ok());
    CHECK(m.error == "illegal memory access");
    CHECK(m.mean == infinite);
    CHECK(m.throughput(1e9) == 0.0);
    CHECK(k.runs_per_call.size() == 3);  // stopped at the throwing call
  }
  SUBCASE("run throws something else -> runtime_error, unknown exception") {
    ScriptedKernel k;
    k.script = [](std::size_t, std::size_t) -> RunResult { throw 42; };
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.status == Status::runtime_error);
    CHECK(m.error == "unknown exception");
    CHECK(k.runs_per_call.size() == 1);  // the warm-up failed already
  }
  SUBCASE("prepare throws -> build_error, nothing run") {
    PreparedKernel k;
    k.script = [](std::size_t, std::size_t runs) { return times(runs, 1e-3); };
    k.on_prepare = []() -> RunResult { throw std::runtime_error("nvcc: syntax error"); };
    const Measurement m = eval.measure(k, {1}, rng);
    CHECK(m.status == Status::build_error);
    CHECK(m.error == "nvcc: syntax error");
    CHECK(m.mean == infinite);
    CHECK(k.prepares == 1);
    CHECK(k.runs_per_call.empty());
  }
  SUBCASE("prepare succeeds once, before any run") {
    PreparedKernel k;
    k.script = [](std::size_t, std::size_t runs) { return times(runs, 1e-3); };
    k.on_prepare = [] { return RunResult{}; };
    const Measurement m = eval.measure(k, {1}, rng);
    CHECK(m.ok());
    CHECK(k.prepares == 1);
    CHECK(k.runs_before_prepare == 0);
    CHECK(k.runs_per_call.size() == 4);
  }
  SUBCASE("prepare returns a failure status -> propagated") {
    PreparedKernel k;
    k.script = [](std::size_t, std::size_t runs) { return times(runs, 1e-3); };
    k.on_prepare = [] {
      return RunResult{.status = Status::build_error, .seconds = {}, .error = "no such option",
                       .simulated_cost = 0.0};
    };
    const Measurement m = eval.measure(k, {1}, rng);
    CHECK(m.status == Status::build_error);
    CHECK(m.error == "no such option");
    CHECK(k.runs_per_call.empty());
  }
  SUBCASE("run returns a failure status -> the same status") {
    for (Status st : {Status::runtime_error, Status::wrong_result, Status::timeout,
                      Status::excluded, Status::build_error}) {
      CAPTURE(tunekit::to_string(st));
      ScriptedKernel k;
      k.script = [st](std::size_t call, std::size_t runs) {
        if (call == 1)
          return RunResult{.status = st, .seconds = {}, .error = "reason",
                           .simulated_cost = 0.0};
        return times(runs, 1e-3);
      };
      const Measurement m = eval.measure(k, {0}, rng);
      CHECK(m.status == st);
      CHECK(m.error == "reason");
      CHECK(m.mean == infinite);
      CHECK(k.runs_per_call.size() == 2);
    }
  }
  SUBCASE("a failing warm-up is a failure too") {
    ScriptedKernel k;
    k.script = [](std::size_t call, std::size_t runs) {
      if (call == 0)
        return RunResult{.status = Status::wrong_result, .seconds = {}, .error = "mismatch",
                         .simulated_cost = 0.0};
      return times(runs, 1e-3);
    };
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.status == Status::wrong_result);
    CHECK(k.runs_per_call.size() == 1);
  }
}

TEST_CASE("Deterministic: invalid times are runtime errors with a clear text") {
  Rng rng(1);
  Deterministic eval({.warmup = 0, .number = 2, .repeat = 3});
  auto measure_with = [&](std::vector<double> returned) {
    ScriptedKernel k;
    k.script = [returned](std::size_t call, std::size_t runs) {
      if (call == 1)
        return RunResult{.status = Status::ok, .seconds = returned, .error = {},
                         .simulated_cost = 0.0};
      return times(runs, 1e-3);
    };
    return eval.measure(k, {0}, rng);
  };
  SUBCASE("NaN, infinite, zero or negative times") {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const auto& bad : std::vector<std::vector<double>>{
             {1e-3, nan}, {-1e-3, 1e-3}, {0.0, 1e-3}, {1e-3, infinite}, {-infinite, 1e-3}}) {
      CAPTURE(bad[0]);
      CAPTURE(bad[1]);
      const Measurement m = measure_with(bad);
      CHECK(m.status == Status::runtime_error);
      CHECK(m.error.find("invalid run time") != std::string::npos);
      CHECK(m.mean == infinite);
    }
  }
  SUBCASE("valid times pass (control)") {
    const Measurement m = measure_with({1e-3, 2e-3});
    CHECK(m.ok());
  }
  SUBCASE("too few times") {
    const Measurement m = measure_with({1e-3});
    CHECK(m.status == Status::runtime_error);
    CHECK(m.error == "kernel returned 1 times for 2 runs");
  }
  SUBCASE("too many times") {
    const Measurement m = measure_with({1e-3, 1e-3, 1e-3});
    CHECK(m.status == Status::runtime_error);
    CHECK(m.error == "kernel returned 3 times for 2 runs");
  }
  SUBCASE("no times") {
    const Measurement m = measure_with({});
    CHECK(m.status == Status::runtime_error);
    CHECK(m.error.find("0 times for 2 runs") != std::string::npos);
  }
}

TEST_CASE("Deterministic: min_repeat_ms grows number until a sample lasts long enough") {
  ScriptedKernel k;
  k.script = [](std::size_t, std::size_t runs) { return times(runs, 0.1e-3); };  // 0.1 ms
  Deterministic eval({.warmup = 0, .number = 1, .repeat = 3, .min_repeat_ms = 10.0});
  Rng rng(1);
  const Measurement m = eval.measure(k, {0}, rng);
  REQUIRE(m.ok());
  REQUIRE(m.samples.size() == 3);
  for (double s : m.samples) CHECK(s == doctest::Approx(0.1e-3));
  CHECK(m.mean == doctest::Approx(0.1e-3));
  // The first request (1 run, 0.1 ms) was too short and was taken again with more runs; the
  // three kept samples each ran >= 10 ms.
  REQUIRE(k.runs_per_call.size() >= 4);
  CHECK(k.runs_per_call.front() == 1);
  const std::size_t calls = k.runs_per_call.size();
  for (std::size_t i = calls - 3; i < calls; ++i) {
    CAPTURE(i);
    CHECK(static_cast<double>(k.runs_per_call[i]) * 0.1 >= 10.0);
    CHECK(k.runs_per_call[i] <= 400);  // grown towards the target, not far past it
  }
  // Number only grows.
  for (std::size_t i = 1; i < calls; ++i) CHECK(k.runs_per_call[i] >= k.runs_per_call[i - 1]);
  // The cost counts every simulated run, the discarded short ones too.
  double runs = 0;
  for (auto r : k.runs_per_call) runs += static_cast<double>(r);
  CHECK(m.cost == doctest::Approx(runs * 0.1e-3));
}

TEST_CASE("Deterministic: min_repeat_ms with a kernel that speeds up as it runs more") {
  // Per-run time falls with the number of runs (amortised launch overhead): several growth
  // steps are needed.
  ScriptedKernel k;
  k.script = [](std::size_t, std::size_t runs) {
    return times(runs, 1e-3 / static_cast<double>(runs));  // every request lasts 1 ms
  };
  SUBCASE("a target the kernel cannot reach: number stops at its cap and the sample is kept") {
    Deterministic eval({.warmup = 0, .number = 1, .repeat = 1, .min_repeat_ms = 5.0});
    Rng rng(1);
    const Measurement m = eval.measure(k, {0}, rng);
    REQUIRE(m.ok());
    CHECK(m.samples.size() == 1);
    CHECK(k.runs_per_call.back() == std::size_t{1} << 24);
    REQUIRE(k.runs_per_call.size() >= 3);  // several growth steps
    CHECK(k.runs_per_call.front() == 1);
    // Every step at least doubles number, until the cap.
    for (std::size_t i = 1; i + 1 < k.runs_per_call.size(); ++i)
      CHECK(k.runs_per_call[i] >= 2 * k.runs_per_call[i - 1]);
    CHECK(m.mean == doctest::Approx(1e-3 / static_cast<double>(std::size_t{1} << 24)));
  }
}

TEST_CASE("Deterministic: min_repeat_ms with absurdly short times caps number") {
  // 1e-30 s per run: the growth factor is ~1e27, beyond any integer; number must stop at its
  // cap (2^24 runs) instead of overflowing.
  ScriptedKernel k;
  k.script = [](std::size_t, std::size_t runs) { return times(runs, 1e-30); };
  Deterministic eval({.warmup = 0, .number = 1, .repeat = 1, .min_repeat_ms = 1.0});
  Rng rng(1);
  const Measurement m = eval.measure(k, {0}, rng);
  REQUIRE(m.ok());
  CHECK(k.runs_per_call == std::vector<std::size_t>{1, std::size_t{1} << 24});
  CHECK(m.mean == doctest::Approx(1e-30));
}

TEST_CASE("Deterministic: timeout_seconds gives Status::timeout") {
  Rng rng(1);
  SUBCASE("slow runs") {
    ScriptedKernel k;
    k.script = [](std::size_t, std::size_t runs) {
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = 0.4;  // each request stands for 0.4 s
      return r;
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 5, .timeout_seconds = 1.0});
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.status == Status::timeout);
    CHECK(m.error.find("exceeded") != std::string::npos);
    CHECK(m.mean == infinite);
    // 0.4 + 0.4 + 0.4 = 1.2 s > 1 s after the third request: no more requests.
    CHECK(k.runs_per_call.size() == 3);
    CHECK(m.cost == doctest::Approx(1.2));
  }
  SUBCASE("slow preparation") {
    PreparedKernel k;
    k.script = [](std::size_t, std::size_t runs) { return times(runs, 1e-3); };
    k.on_prepare = [] {
      return RunResult{.status = Status::ok, .seconds = {}, .error = {}, .simulated_cost = 2.0};
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 3, .timeout_seconds = 1.0});
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.status == Status::timeout);
    CHECK(k.runs_per_call.empty());
    CHECK(m.cost == doctest::Approx(2.0));
  }
  SUBCASE("within the limit") {
    ScriptedKernel k;
    k.script = [](std::size_t, std::size_t runs) {
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = 0.2;
      return r;
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 3, .timeout_seconds = 1.0});
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.ok());
    CHECK(m.cost == doctest::Approx(0.8));
  }
  SUBCASE("no limit when timeout_seconds = 0") {
    ScriptedKernel k;
    k.script = [](std::size_t, std::size_t runs) {
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = 100.0;
      return r;
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 3});
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.ok());
    CHECK(m.cost == doctest::Approx(400.0));
  }
}

TEST_CASE("Deterministic: cost adds simulated_cost when >= 0, wall-clock time otherwise") {
  Rng rng(1);
  SUBCASE("simulated") {
    PreparedKernel k;
    k.script = [](std::size_t, std::size_t runs) {
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = 0.25;
      return r;
    };
    k.on_prepare = [] {
      return RunResult{.status = Status::ok, .seconds = {}, .error = {}, .simulated_cost = 1.5};
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 3});
    const Measurement m = eval.measure(k, {0}, rng);
    REQUIRE(m.ok());
    CHECK(m.cost == doctest::Approx(1.5 + 4 * 0.25).epsilon(1e-12));
  }
  SUBCASE("a simulated cost of zero counts as zero, not as wall-clock time") {
    ScriptedKernel k;
    k.script = [](std::size_t, std::size_t runs) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = 0.0;
      return r;
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 3});
    const Measurement m = eval.measure(k, {0}, rng);
    REQUIRE(m.ok());
    CHECK(m.cost == 0.0);
  }
  SUBCASE("wall-clock") {
    ScriptedKernel k;
    k.script = [](std::size_t, std::size_t runs) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = -1.0;
      return r;
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 2});
    const Measurement m = eval.measure(k, {0}, rng);
    REQUIRE(m.ok());
    // 3 requests of >= 20 ms each (sleep_for never returns early); loose upper bound for a
    // loaded machine.
    CHECK(m.cost >= 0.060);
    CHECK(m.cost < 5.0);
  }
  SUBCASE("a failure still costs") {
    ScriptedKernel k;
    k.script = [](std::size_t call, std::size_t runs) -> RunResult {
      if (call == 1) throw std::runtime_error("crash");
      RunResult r = times(runs, 1e-3);
      r.simulated_cost = 0.5;
      return r;
    };
    Deterministic eval({.warmup = 1, .number = 1, .repeat = 3});
    const Measurement m = eval.measure(k, {0}, rng);
    CHECK(m.status == Status::runtime_error);
    CHECK(m.cost >= 0.5);  // the warm-up's simulated cost, plus the throwing call's wall time
    CHECK(m.cost < 1.5);
  }
}

TEST_CASE("DeterministicParams::validate") {
  CHECK_NOTHROW(DeterministicParams{}.validate());
  CHECK_NOTHROW((DeterministicParams{.warmup = 0, .number = 1, .repeat = 1}.validate()));
  CHECK_THROWS_WITH_AS(DeterministicParams{.repeat = 0}.validate(), doctest::Contains("repeat"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DeterministicParams{.number = 0}.validate(), doctest::Contains("number"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DeterministicParams{.min_repeat_ms = -1.0}.validate(),
                       doctest::Contains("min_repeat_ms"), std::invalid_argument);
  CHECK_THROWS_AS(
      DeterministicParams{.min_repeat_ms = std::numeric_limits<double>::quiet_NaN()}.validate(),
      std::invalid_argument);
  CHECK_THROWS_AS(DeterministicParams{.min_repeat_ms = infinite}.validate(), std::invalid_argument);
  CHECK_THROWS_WITH_AS(DeterministicParams{.timeout_seconds = -0.5}.validate(),
                       doctest::Contains("timeout_seconds"), std::invalid_argument);
  CHECK_THROWS_AS(
      DeterministicParams{.timeout_seconds = std::numeric_limits<double>::quiet_NaN()}.validate(),
      std::invalid_argument);
  // The evaluator validates on construction.
  CHECK_THROWS_AS(Deterministic({.repeat = 0}), std::invalid_argument);
  CHECK_THROWS_AS(Deterministic({.number = 0}), std::invalid_argument);
  const Deterministic eval({.warmup = 3, .number = 2, .repeat = 7});
  CHECK(eval.params().warmup == 3);
  CHECK(eval.params().repeat == 7);
}

TEST_CASE("stats::mean and stats::stddev") {
  const std::vector<double> x{2, 4, 4, 4, 5, 5, 7, 9};
  CHECK(tunekit::stats::mean(x) == doctest::Approx(5.0));
  CHECK(tunekit::stats::stddev(x) == doctest::Approx(std::sqrt(32.0 / 7.0)));
  CHECK(std::isnan(tunekit::stats::mean(std::vector<double>{})));
  CHECK(tunekit::stats::stddev(std::vector<double>{3.0}) == 0.0);
}
