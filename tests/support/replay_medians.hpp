#pragma once
// Median scores on a recorded space, for the end-to-end tests of the presets.

#include <tunekit/replay/replay_kernel.hpp>
#include <tunekit/replay_score.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tunekit_test {

// The score after `budget` measured configs (plan_size 32) for each of the seeds 0..seeds-1.
template <class TunerT>
std::vector<double> scores(tunekit::ReplayKernel& k, std::size_t budget, std::uint64_t seeds) {
  std::vector<double> s;
  for (std::uint64_t seed = 0; seed < seeds; ++seed) {
    TunerT t(k.space(), {.budget = {.trials = budget}, .plan_size = 32});
    tunekit::Rng rng(seed);
    s.push_back(tunekit::score_at(tunekit::replay_trace(t, k, rng), budget));
  }
  return s;
}

// Median over seeds 0..seeds-1 of the score after `budget` measured configs (plan_size 32).
template <class TunerT>
double median_score(tunekit::ReplayKernel& k, std::size_t budget, std::uint64_t seeds) {
  return tunekit::quantile(scores<TunerT>(k, budget, seeds), 0.5);
}

// The exact median score of random search without replacement at `budget`.
inline double random_median(tunekit::ReplayKernel& k, std::size_t budget) {
  for (const auto& [s, p] : tunekit::random_search_score_cdf(k.recorded_times_ms(), budget))
    if (p >= 0.5) return s;
  return 1.0;
}

}  // namespace tunekit_test
