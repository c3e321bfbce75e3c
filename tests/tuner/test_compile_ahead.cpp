// Compilation ahead of measurement (TunerOptions::compile_ahead, PrefetchingKernel): which
// configs a serial run starts compiling before each trial, checked on a kernel that records its
// prefetch and prepare calls (no compiler, no GPU).

#include <tunekit/tunekit.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <vector>

namespace {

tunekit::SearchSpace line_space() {
  tunekit::SearchSpace s;
  s.add(tunekit::Knob::range("x", 0, 63));
  return s;
}

// Records, for every config, when its prefetch was asked (the number of configs prepared by
// then) and the order of the prepares (a prepare is where a real kernel compiles).
struct RecordingKernel {
  tunekit::SearchSpace s = line_space();
  std::vector<tunekit::Config> prepared;
  std::map<tunekit::Config, std::size_t> prefetched_at;
  std::size_t prefetched_twice = 0;

  const tunekit::SearchSpace& space() const { return s; }
  double flop() const { return 1.0; }
  void prefetch(const std::vector<tunekit::Config>& configs) {
    for (const auto& c : configs)
      if (!prefetched_at.emplace(c, prepared.size()).second) ++prefetched_twice;
  }
  tunekit::RunResult prepare(const tunekit::Config& c) {
    prepared.push_back(c);
    return {};
  }
  tunekit::RunResult run(const tunekit::Config& c, std::size_t runs, tunekit::Rng&) {
    tunekit::RunResult r;
    r.seconds.assign(runs, 1e-3 * (1.0 + static_cast<double>(s.view(c)["x"])));
    return r;
  }
};
static_assert(tunekit::PrefetchingKernel<RecordingKernel>);
static_assert(!tunekit::PrefetchingKernel<tunekit::ReplayKernel>);

}  // namespace

TEST_CASE("compile ahead: the window of a round moves on by one config per trial, each config once") {
  std::vector<tunekit::Config> batch;
  for (std::size_t i = 0; i < 6; ++i) batch.push_back(tunekit::Config(1, static_cast<tunekit::Config::value_type>(i)));
  tunekit::detail::CompileAhead ahead(batch, 2);
  CHECK(ahead.before(0) == std::vector<tunekit::Config>{{1}, {2}});
  CHECK(ahead.before(1) == std::vector<tunekit::Config>{{3}});
  CHECK(ahead.before(2) == std::vector<tunekit::Config>{{4}});
  CHECK(ahead.before(3) == std::vector<tunekit::Config>{{5}});
  CHECK(ahead.before(4).empty());
  CHECK(ahead.before(5).empty());

  tunekit::detail::CompileAhead none(batch, 0);
  for (std::size_t k = 0; k < batch.size(); ++k) CHECK(none.before(k).empty());

  tunekit::detail::CompileAhead wide(batch, 10);
  CHECK(wide.before(0).size() == 5);
  CHECK(wide.before(1).empty());
}

TEST_CASE("compile ahead: a serial tune starts compiling each config 3 trials before it is measured") {
  RecordingKernel kernel;
  // Rounds of 8: trials 0-7, 8-15, 16-19 (the budget's last 4).
  tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = 20}, .plan_size = 8, .compile_ahead = 3});
  tunekit::Rng rng(5);
  const auto result = tuner.tune(kernel, rng);
  REQUIRE(result.trials == 20);
  REQUIRE(kernel.prepared.size() == 20);
  CHECK(kernel.prefetched_twice == 0);
  for (std::size_t t = 0; t < 20; ++t) {
    INFO("trial " << t);
    const tunekit::Config& c = tuner.history()[t].config;
    CHECK(kernel.prepared[t] == c);
    const std::size_t round_start = t / 8 * 8;
    const auto it = kernel.prefetched_at.find(c);
    if (t == round_start) {
      CHECK(it == kernel.prefetched_at.end());  // a round's first config: compiled when measured
    } else {
      REQUIRE(it != kernel.prefetched_at.end());
      // Asked before trial max(t - 3, round start) was prepared: 3 trials ahead, within its round.
      CHECK(it->second == std::max(t >= 3 ? t - 3 : 0, round_start));
    }
  }
  // Nothing beyond the run's configs.
  CHECK(kernel.prefetched_at.size() == 20 - 3);
}

TEST_CASE("compile ahead: 0 prefetches nothing, and recorded trials of an exact resume are not prefetched") {
  {
    RecordingKernel kernel;
    tunekit::RandomSearchTuner tuner(kernel.space(), {.budget = {.trials = 12}, .plan_size = 4, .compile_ahead = 0});
    tunekit::Rng rng(5);
    tuner.tune(kernel, rng);
    CHECK(kernel.prepared.size() == 12);
    CHECK(kernel.prefetched_at.empty());
  }
  // The first 6 trials of a run taken from its records: the run measures trials 6-11 and
  // prefetches only among them (round 8-11 from its start; round 4-7 from trial 6 on).
  RecordingKernel first;
  tunekit::RandomSearchTuner full(first.space(), {.budget = {.trials = 12}, .plan_size = 4, .compile_ahead = 2});
  tunekit::Rng rng(5);
  full.tune(first, rng);
  std::vector<std::pair<tunekit::Config, tunekit::Measurement>> recorded;
  for (std::size_t t = 0; t < 6; ++t) recorded.emplace_back(full.history()[t].config, full.history()[t].measurement);

  RecordingKernel kernel;
  tunekit::RandomSearchTuner resumed(kernel.space(), {.budget = {.trials = 12}, .plan_size = 4, .compile_ahead = 2});
  resumed.set_recorded(std::move(recorded), "test", nullptr);
  tunekit::Rng rng2(5);
  resumed.tune(kernel, rng2);
  REQUIRE(resumed.history().size() == 12);
  CHECK(kernel.prepared.size() == 6);
  for (std::size_t t = 0; t < 12; ++t) {
    INFO("trial " << t);
    CHECK(resumed.history()[t].config == full.history()[t].config);
    const bool prefetched = kernel.prefetched_at.contains(resumed.history()[t].config);
    // Trial 6 is measured first (when the records ran out) and trial 8 starts its round.
    CHECK(prefetched == (t == 7 || t == 9 || t == 10 || t == 11));
  }
}

TEST_CASE("compile ahead: an evaluator that measures in a forked child is never compiled ahead for") {
  static_assert(tunekit::detail::measures_in_child_v<tunekit::Isolated<tunekit::Deterministic>>);
  static_assert(!tunekit::detail::measures_in_child_v<tunekit::Deterministic>);
  RecordingKernel kernel;
  tunekit::Tuner<tunekit::NoSurrogate, tunekit::PredictedMean, tunekit::RandomSearch,
                 tunekit::Isolated<tunekit::Deterministic>>
      tuner(kernel.space(), {.budget = {.trials = 8}, .plan_size = 4, .compile_ahead = 3});
  tunekit::Rng rng(5);
  const auto result = tuner.tune(kernel, rng);
  CHECK(result.trials == 8);
  CHECK(tuner.history().size() == 8);
  CHECK(kernel.prefetched_at.empty());
}
