// The time-based score P of Willemsen et al. (replay_score.hpp: time_score).

#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>
#include <tunekit/presets.hpp>

#include "support/files.hpp"
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {


// Six configs, one failed; one sample per row, so a measured mean is the recorded time.
// Sorted times 1, 2, 3, 4, 5 ms and the failure, which counts as the worst finite time, 5.
const std::string six =
    "a,b,time_ms,samples\n"
    "1,0,3.0,3.0\n"
    "1,1,1.0,1.0\n"
    "2,0,inf,\n"
    "2,1,5.0,5.0\n"
    "3,0,2.0,2.0\n"
    "3,1,4.0,4.0\n";

// A trial of a hand-made trace: the row's config measured at its recorded time (or failed).
tunekit::Trial trial(const tunekit::ReplayKernel& k, std::size_t row, double tuning_seconds) {
  const auto c = k.recorded_configs()[row];
  const double ms = k.recorded_times_ms()[row];
  auto m = std::isfinite(ms) ? tunekit::Measurement::from_samples({ms * 1e-3})
                             : tunekit::Measurement::failure(tunekit::Status::runtime_error, "failed", 0.25);
  return {c, k.space().to_index(c), std::move(m), tuning_seconds};
}

}  // namespace

TEST_CASE("f_rand equals the mean best over every subset of k configs") {
  auto k = tunekit::test::replay_from_text(six, {.overhead_seconds = 0.25});
  const auto times = k.recorded_times_ms();
  const auto f = tunekit::random_search_expected_best_ms(times, 8);
  REQUIRE(f.size() == 9);
  // Exact enumeration: the mean over the C(6, k) subsets of the best time, a failure as 5 ms.
  for (unsigned kk = 0; kk <= 6; ++kk) {
    double sum = 0.0;
    int subsets = 0;
    for (unsigned mask = 0; mask < 64; ++mask) {
      if (std::popcount(mask) != static_cast<int>(kk)) continue;
      double best = 5.0;
      for (unsigned r = 0; r < 6; ++r)
        if (mask & (1u << r)) best = std::min(best, times[r]);
      sum += best;
      ++subsets;
    }
    CAPTURE(kk);
    CHECK(f[kk] == doctest::Approx(sum / subsets).epsilon(1e-12));
  }
  CHECK(f[0] == 5.0);
  CHECK(f[1] == doctest::Approx(20.0 / 6.0).epsilon(1e-12));  // the mean, the failure as 5
  CHECK(f[6] == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(f[8] == doctest::Approx(1.0).epsilon(1e-12));  // k > N counts as N

  // Linear between integer k; f_rand(t) at k = t / c_bar.
  CHECK(tunekit::interpolate_curve(f, 2.5) == doctest::Approx((f[2] + f[3]) / 2).epsilon(1e-12));
  const auto b = tunekit::time_score_baseline(times, 0.5, 4);
  CHECK(b.budget_seconds == 2.0);
  CHECK(b.optimum_ms == 1.0);
  CHECK(b.worst_ms == 5.0);
  CHECK(tunekit::random_baseline_ms(b, 0.75) == doctest::Approx((f[1] + f[2]) / 2).epsilon(1e-12));

  // c_bar with the deterministic evaluator (warm-up 1, 3 repeats, one recorded sample per row):
  // 0.25 s overhead per row plus 4 runs of its time; the failed row costs the overhead only.
  CHECK(tunekit::seconds_per_config(k, tunekit::Deterministic{}) ==
        doctest::Approx((6 * 0.25 + 4e-3 * (1 + 2 + 3 + 4 + 5)) / 6).epsilon(1e-12));

  CHECK_THROWS_AS(tunekit::time_score_baseline(times, 0.0, 4), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::time_score_baseline(times, 1.0, 0), std::invalid_argument);
  CHECK_THROWS_AS(tunekit::random_search_expected_best_ms({INFINITY}, 3), std::invalid_argument);
}

TEST_CASE("a trace that holds the optimum from its first trial scores 1 from then on") {
  auto k = tunekit::test::replay_from_text(six);
  // c_bar = 1 s, budget 4: T = 4 s, t_i = 0.04 i s, k(t_i) = 0.04 i configs.
  const auto b = tunekit::time_score_baseline(k.recorded_times_ms(), 1.0, 4);
  tunekit::ReplayTrace from_start;
  from_start.trials = {trial(k, 1, 0.0), trial(k, 0, 1.0)};  // row 1 is the optimum, 1 ms
  CHECK(tunekit::time_score(from_start, k, b) == 1.0);

  // The optimum at t = 0.1 s, between t_2 and t_3: f_s = 5 (the worst) at t_1 and t_2, where
  // f_rand(k) = 5 - (5 - 10/3) k for k < 1, so P(t_i) = (f_rand - 5) / (f_rand - 1); 1 after.
  tunekit::ReplayTrace late;
  late.trials = {trial(k, 1, 0.1), trial(k, 4, 0.5), trial(k, 2, 0.9)};
  double expected = 98.0;
  for (double ki : {0.04, 0.08}) {
    const double f_rand = 5.0 - 5.0 / 3.0 * ki;
    expected += (f_rand - 5.0) / (f_rand - 1.0);
  }
  CHECK(tunekit::time_score(late, k, b) == doctest::Approx(expected / 100).epsilon(1e-12));
  CHECK(expected / 100 == doctest::Approx(0.979486).epsilon(1e-5));  // by hand

  // A trial after T does not count: the optimum found at 4.5 s leaves the worst held throughout.
  tunekit::ReplayTrace after_budget;
  after_budget.trials = {trial(k, 1, 4.5)};
  CHECK(tunekit::time_score(after_budget, k, b) < 0.0);
}

TEST_CASE("a trace that never succeeds scores at most 0") {
  auto k = tunekit::test::replay_from_text(six);
  const auto b = tunekit::time_score_baseline(k.recorded_times_ms(), 1.0, 4);
  tunekit::ReplayTrace failed, empty;
  failed.trials = {trial(k, 2, 0.5)};  // row 2 is the failed config
  const double p = tunekit::time_score(failed, k, b);
  CHECK(p <= 0.0);
  CHECK(p >= -1.0);
  CHECK(p == tunekit::time_score(empty, k, b));
  // Holding the worst config is the same as holding nothing.
  tunekit::ReplayTrace worst;
  worst.trials = {trial(k, 3, 0.5)};
  CHECK(tunekit::time_score(worst, k, b) == p);

  // The point score at its edges: clipped to -1; f_rand at the optimum gives 1 or 0.
  CHECK(tunekit::time_score_point(2.0, 100.0, 1.0) == -1.0);
  CHECK(tunekit::time_score_point(1.0, 1.0, 1.0) == 1.0);
  CHECK(tunekit::time_score_point(1.0, 2.0, 1.0) == 0.0);
}

TEST_CASE("random search scores about 0 on average") {
  // 400 configs on a 20 x 20 grid: the optimum (1 ms), 8 failed rows and the rest at
  // 10 .. 11 ms, so within a budget of 40 configs P(t) never reaches the clip at -1
  // (f_rand >= 9.1, f_s <= 11); one sample per row: noiseless selection.
  std::string csv = "a,b,time_ms,samples\n";
  for (int i = 0; i < 400; ++i) {
    const double ms = i == 0 ? 1.0 : 10.0 + i / 400.0;
    const std::string t = i % 50 == 25 ? "inf," : std::to_string(ms) + "," + std::to_string(ms);
    csv += std::to_string(i / 20) + "," + std::to_string(i % 20) + "," + t + "\n";
  }
  auto k = tunekit::test::replay_from_text(csv);
  const std::size_t budget = 40;
  const auto b = tunekit::time_score_baseline(k.recorded_times_ms(),
                                              tunekit::seconds_per_config(k, tunekit::Deterministic{}), budget);
  std::vector<double> p;
  for (std::uint64_t seed = 0; seed < 1000; ++seed) {
    tunekit::RandomSearchTuner t(k.space(), {.budget = {.trials = budget}});
    tunekit::Rng rng(seed);
    p.push_back(tunekit::time_score(tunekit::replay_trace(t, k, rng), k, b));
  }
  const double mean = tunekit::stats::mean(p), se = tunekit::stats::stddev(p) / std::sqrt(1000.0);
  CAPTURE(mean);
  CAPTURE(se);
  // Tolerance: 4 standard errors of the mean over 1000 seeds (about 0.03 here) plus 0.01 for the
  // definition's own bias (f_s steps at each trial while f_rand is linear between integer k;
  // seeds 0 .. 39999 of this setting, run once outside the test, average -0.002 +- 0.001).
  CHECK(std::abs(mean) <= 4 * se + 0.01);
  CHECK(se < 0.01);
}
